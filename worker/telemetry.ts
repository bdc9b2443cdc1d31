// The repository's telemetry Worker (wrangler.toml `main`): the first user of the component the
// package exports. A user's own Worker is these lines with the package installed; here wrangler.toml
// aliases 'kafka-edge/worker' to the sources so `wrangler dev` runs what is in the tree.
import { KafkaProducerObject, telemetryApp } from 'kafka-edge/worker'

/** Bound as PRODUCER in wrangler.toml; the class name predates the component (its storage stays). */
export class ProducerObject extends KafkaProducerObject {}

export default telemetryApp({ binding: 'PRODUCER' })
