// Types for schemas.mjs, which stays plain JavaScript because every app runs it as is.
export declare const AVRO_SCHEMA: Record<string, unknown>
export declare const avroValues: () => Array<Record<string, unknown>>
export declare const AVRO_DECODED: Array<Record<string, unknown>>
export declare const PROTO_SCHEMA: string
export declare const PROTO_MESSAGE: string
export declare const PROTO_INDEX: number[]
export declare const protoValues: () => Array<Record<string, unknown>>
export declare const PROTO_DECODED: Array<Record<string, unknown>>
export declare const avroSubject: (topic: string) => string
export declare const protoSubject: (topic: string) => string
export declare const SCHEMA_COUNTS: { avro: number; protobuf: number }
