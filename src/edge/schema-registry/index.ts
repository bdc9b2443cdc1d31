/**
 * kafka-edge/schema-registry: Avro, Protobuf and JSON Schema records in the Confluent wire format,
 * with a Schema Registry client on fetch alone. A separate entry, so bundles that do not import it
 * do not carry it.
 */
export { SchemaRegistryClient, schemaRegistryClient, LruCache, type RegistrySchema, type RegisteredSchema, type SchemaReference, type SchemaType } from './client.js'
export type { SchemaRegistrySettings, SubjectNameStrategy, BearerTokenProvider } from './config.js'
export * from './errors.js'
export { SchemaSerializer, type Serializer, type SerializerOptions, type SchemaCodec } from './serializer.js'
export { AvroSerializer, avroSerializer } from './avro-serializer.js'
export type { AvroSchema } from './avro.js'
export { ProtobufSerializer, protobufSerializer, type ProtobufOptions } from './protobuf-serializer.js'
export { JsonSchemaSerializer, jsonSchemaSerializer, type JsonSchemaOptions } from './json-serializer.js'
export { SerializingProducer, withSerializers, type SerializerSettings, type SerializingRecord } from './producer.js'
