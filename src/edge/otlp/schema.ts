/**
 * The OTLP messages (opentelemetry-proto v1.x: common, resource, trace, logs, metrics and the
 * collector service responses) as data: field number, JSON name, kind. One table drives validation
 * of protobuf bodies, the JSON <-> protobuf transcoding and the item counts, so no generated code.
 */

export type Kind =
  | 'string' | 'bytes' | 'bool' | 'double'
  | 'int32' | 'uint32' | 'sint32' | 'enum' | 'fixed32'
  | 'int64' | 'uint64' | 'fixed64' | 'sfixed64'
  | 'message'

export interface FieldSpec {
  no: number
  /** lowerCamelCase, as the OTLP JSON mapping names it. */
  json: string
  kind: Kind
  repeated?: true
  /** kind 'message': the message's name in MESSAGES. */
  message?: string
  /** bytes holding a trace (16) or span (8) id: hex in JSON, and of exactly that length (or empty) on the wire. */
  id?: 16 | 8
  /** A oneof member or a proto3 `optional`: written even when it holds the default value. */
  presence?: true
}

const f = (no: number, json: string, kind: Kind, more: Partial<FieldSpec> = {}): FieldSpec => ({ no, json, kind, ...more })
const msg = (no: number, json: string, message: string, more: Partial<FieldSpec> = {}): FieldSpec => f(no, json, 'message', { message, ...more })
const rep = (no: number, json: string, message: string): FieldSpec => msg(no, json, message, { repeated: true })
const attrs = (no: number, json = 'attributes') => rep(no, json, 'KeyValue')

export const MESSAGES: Record<string, readonly FieldSpec[]> = {
  AnyValue: [
    f(1, 'stringValue', 'string', { presence: true }), f(2, 'boolValue', 'bool', { presence: true }), f(3, 'intValue', 'int64', { presence: true }),
    f(4, 'doubleValue', 'double', { presence: true }), msg(5, 'arrayValue', 'ArrayValue', { presence: true }),
    msg(6, 'kvlistValue', 'KeyValueList', { presence: true }), f(7, 'bytesValue', 'bytes', { presence: true }),
    f(8, 'stringValueStrindex', 'int32', { presence: true }),
  ],
  ArrayValue: [rep(1, 'values', 'AnyValue')],
  KeyValueList: [rep(1, 'values', 'KeyValue')],
  KeyValue: [f(1, 'key', 'string'), msg(2, 'value', 'AnyValue'), f(3, 'keyStrindex', 'int32')],
  InstrumentationScope: [f(1, 'name', 'string'), f(2, 'version', 'string'), attrs(3), f(4, 'droppedAttributesCount', 'uint32')],
  EntityRef: [f(1, 'schemaUrl', 'string'), f(2, 'type', 'string'), f(3, 'idKeys', 'string', { repeated: true }), f(4, 'descriptionKeys', 'string', { repeated: true })],
  Resource: [attrs(1), f(2, 'droppedAttributesCount', 'uint32'), rep(3, 'entityRefs', 'EntityRef')],

  TracesData: [rep(1, 'resourceSpans', 'ResourceSpans')],
  ResourceSpans: [msg(1, 'resource', 'Resource'), rep(2, 'scopeSpans', 'ScopeSpans'), f(3, 'schemaUrl', 'string')],
  ScopeSpans: [msg(1, 'scope', 'InstrumentationScope'), rep(2, 'spans', 'Span'), f(3, 'schemaUrl', 'string')],
  Span: [
    f(1, 'traceId', 'bytes', { id: 16 }), f(2, 'spanId', 'bytes', { id: 8 }), f(3, 'traceState', 'string'), f(4, 'parentSpanId', 'bytes', { id: 8 }),
    f(16, 'flags', 'fixed32'), f(5, 'name', 'string'), f(6, 'kind', 'enum'), f(7, 'startTimeUnixNano', 'fixed64'), f(8, 'endTimeUnixNano', 'fixed64'),
    attrs(9), f(10, 'droppedAttributesCount', 'uint32'), rep(11, 'events', 'SpanEvent'), f(12, 'droppedEventsCount', 'uint32'),
    rep(13, 'links', 'SpanLink'), f(14, 'droppedLinksCount', 'uint32'), msg(15, 'status', 'Status'),
  ],
  SpanEvent: [f(1, 'timeUnixNano', 'fixed64'), f(2, 'name', 'string'), attrs(3), f(4, 'droppedAttributesCount', 'uint32')],
  SpanLink: [
    f(1, 'traceId', 'bytes', { id: 16 }), f(2, 'spanId', 'bytes', { id: 8 }), f(3, 'traceState', 'string'), attrs(4),
    f(5, 'droppedAttributesCount', 'uint32'), f(6, 'flags', 'fixed32'),
  ],
  Status: [f(2, 'message', 'string'), f(3, 'code', 'enum')],

  LogsData: [rep(1, 'resourceLogs', 'ResourceLogs')],
  ResourceLogs: [msg(1, 'resource', 'Resource'), rep(2, 'scopeLogs', 'ScopeLogs'), f(3, 'schemaUrl', 'string')],
  ScopeLogs: [msg(1, 'scope', 'InstrumentationScope'), rep(2, 'logRecords', 'LogRecord'), f(3, 'schemaUrl', 'string')],
  LogRecord: [
    f(1, 'timeUnixNano', 'fixed64'), f(11, 'observedTimeUnixNano', 'fixed64'), f(2, 'severityNumber', 'enum'), f(3, 'severityText', 'string'),
    msg(5, 'body', 'AnyValue'), attrs(6), f(7, 'droppedAttributesCount', 'uint32'), f(8, 'flags', 'fixed32'),
    f(9, 'traceId', 'bytes', { id: 16 }), f(10, 'spanId', 'bytes', { id: 8 }), f(12, 'eventName', 'string'),
  ],

  MetricsData: [rep(1, 'resourceMetrics', 'ResourceMetrics')],
  ResourceMetrics: [msg(1, 'resource', 'Resource'), rep(2, 'scopeMetrics', 'ScopeMetrics'), f(3, 'schemaUrl', 'string')],
  ScopeMetrics: [msg(1, 'scope', 'InstrumentationScope'), rep(2, 'metrics', 'Metric'), f(3, 'schemaUrl', 'string')],
  Metric: [
    f(1, 'name', 'string'), f(2, 'description', 'string'), f(3, 'unit', 'string'),
    msg(5, 'gauge', 'Gauge', { presence: true }), msg(7, 'sum', 'Sum', { presence: true }), msg(9, 'histogram', 'Histogram', { presence: true }),
    msg(10, 'exponentialHistogram', 'ExponentialHistogram', { presence: true }), msg(11, 'summary', 'Summary', { presence: true }),
    attrs(12, 'metadata'),
  ],
  Gauge: [rep(1, 'dataPoints', 'NumberDataPoint')],
  Sum: [rep(1, 'dataPoints', 'NumberDataPoint'), f(2, 'aggregationTemporality', 'enum'), f(3, 'isMonotonic', 'bool')],
  Histogram: [rep(1, 'dataPoints', 'HistogramDataPoint'), f(2, 'aggregationTemporality', 'enum')],
  ExponentialHistogram: [rep(1, 'dataPoints', 'ExponentialHistogramDataPoint'), f(2, 'aggregationTemporality', 'enum')],
  Summary: [rep(1, 'dataPoints', 'SummaryDataPoint')],
  NumberDataPoint: [
    attrs(7), f(2, 'startTimeUnixNano', 'fixed64'), f(3, 'timeUnixNano', 'fixed64'), f(4, 'asDouble', 'double', { presence: true }),
    f(6, 'asInt', 'sfixed64', { presence: true }), rep(5, 'exemplars', 'Exemplar'), f(8, 'flags', 'uint32'),
  ],
  HistogramDataPoint: [
    attrs(9), f(2, 'startTimeUnixNano', 'fixed64'), f(3, 'timeUnixNano', 'fixed64'), f(4, 'count', 'fixed64'), f(5, 'sum', 'double', { presence: true }),
    f(6, 'bucketCounts', 'fixed64', { repeated: true }), f(7, 'explicitBounds', 'double', { repeated: true }), rep(8, 'exemplars', 'Exemplar'),
    f(10, 'flags', 'uint32'), f(11, 'min', 'double', { presence: true }), f(12, 'max', 'double', { presence: true }),
  ],
  ExponentialHistogramDataPoint: [
    attrs(1), f(2, 'startTimeUnixNano', 'fixed64'), f(3, 'timeUnixNano', 'fixed64'), f(4, 'count', 'fixed64'), f(5, 'sum', 'double', { presence: true }),
    f(6, 'scale', 'sint32'), f(7, 'zeroCount', 'fixed64'), msg(8, 'positive', 'Buckets'), msg(9, 'negative', 'Buckets'), f(10, 'flags', 'uint32'),
    rep(11, 'exemplars', 'Exemplar'), f(12, 'min', 'double', { presence: true }), f(13, 'max', 'double', { presence: true }), f(14, 'zeroThreshold', 'double'),
  ],
  Buckets: [f(1, 'offset', 'sint32'), f(2, 'bucketCounts', 'uint64', { repeated: true })],
  SummaryDataPoint: [
    attrs(7), f(2, 'startTimeUnixNano', 'fixed64'), f(3, 'timeUnixNano', 'fixed64'), f(4, 'count', 'fixed64'), f(5, 'sum', 'double'),
    rep(6, 'quantileValues', 'ValueAtQuantile'), f(8, 'flags', 'uint32'),
  ],
  ValueAtQuantile: [f(1, 'quantile', 'double'), f(2, 'value', 'double')],
  Exemplar: [
    attrs(7, 'filteredAttributes'), f(2, 'timeUnixNano', 'fixed64'), f(3, 'asDouble', 'double', { presence: true }),
    f(6, 'asInt', 'sfixed64', { presence: true }), f(4, 'spanId', 'bytes', { id: 8 }), f(5, 'traceId', 'bytes', { id: 16 }),
  ],

  // The service responses and the error body (google.rpc.Status; `details` is left empty).
  ExportTraceServiceResponse: [msg(1, 'partialSuccess', 'ExportTracePartialSuccess')],
  ExportTracePartialSuccess: [f(1, 'rejectedSpans', 'int64'), f(2, 'errorMessage', 'string')],
  ExportLogsServiceResponse: [msg(1, 'partialSuccess', 'ExportLogsPartialSuccess')],
  ExportLogsPartialSuccess: [f(1, 'rejectedLogRecords', 'int64'), f(2, 'errorMessage', 'string')],
  ExportMetricsServiceResponse: [msg(1, 'partialSuccess', 'ExportMetricsPartialSuccess')],
  ExportMetricsPartialSuccess: [f(1, 'rejectedDataPoints', 'int64'), f(2, 'errorMessage', 'string')],
  RpcStatus: [f(1, 'code', 'int32'), f(2, 'message', 'string')],
}

/** Enum values by name, for JSON bodies that name them (the mapping asks for integers; protojson readers take both). */
export const ENUM_NAMES: Record<string, number> = {
  SPAN_KIND_UNSPECIFIED: 0, SPAN_KIND_INTERNAL: 1, SPAN_KIND_SERVER: 2, SPAN_KIND_CLIENT: 3, SPAN_KIND_PRODUCER: 4, SPAN_KIND_CONSUMER: 5,
  STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2,
  AGGREGATION_TEMPORALITY_UNSPECIFIED: 0, AGGREGATION_TEMPORALITY_DELTA: 1, AGGREGATION_TEMPORALITY_CUMULATIVE: 2,
  SEVERITY_NUMBER_UNSPECIFIED: 0,
  ...Object.fromEntries(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'].flatMap((level, i) =>
    ['', '2', '3', '4'].map((n, j) => [`SEVERITY_NUMBER_${level}${n}`, i * 4 + j + 1]))),
}

/** Per message: its fields by number and by JSON name (lowerCamelCase and the proto's snake_case). */
export interface MessageIndex { byNo: Map<number, FieldSpec>; byName: Map<string, FieldSpec> }

const snake = (camel: string) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

export const INDEX: Record<string, MessageIndex> = Object.fromEntries(Object.entries(MESSAGES).map(([name, specs]) => {
  const byNo = new Map<number, FieldSpec>()
  const byName = new Map<string, FieldSpec>()
  for (const s of specs) {
    byNo.set(s.no, s)
    byName.set(s.json, s)
    byName.set(snake(s.json), s)
  }
  return [name, { byNo, byName }]
}))
