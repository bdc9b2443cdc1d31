// Apicurio's Java Kafka serdes as a reference for kafka-edge's schema registry serializers
// (test/registry/java-serde.test.ts). One JSON request a line on stdin, one JSON answer a line on stdout:
//
//   {"op":"serialize","format":"avro|protobuf|json","topic":T,"schema":S,"message":M,"value":V} -> {"hex":H}
//   {"op":"deserialize","format":...,"topic":T,"schema":S,"message":M,"hex":H}                  -> {"value":V}
//                                       (Avro also "logical": Avro's conversions of the logical-type fields)
//   anything that fails                                                                          -> {"error":E}
//                                                   (SERDE_TRACE=1 also prints its stack trace to stderr)
//
// Avro values are in Avro's JSON encoding, Protobuf values in protobuf's JSON mapping, JSON Schema values
// as they are. The serializers find the schema as the latest version of the subject <topic>-value that
// kafka-edge registered through the Confluent-compatible API, and write the Confluent framing: magic byte
// 0, the 4-byte content id (which that API calls the schema id), no Kafka headers; Protobuf adds message
// indexes and no Apicurio type reference.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.util.JsonFormat;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaDeserializer;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaSerializer;
import io.apicurio.registry.serde.protobuf.MessageIndexesUtil;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaDeserializer;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaSerializer;
import io.apicurio.registry.utils.protobuf.schema.FileDescriptorUtils;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.avro.Conversion;
import org.apache.avro.Conversions;
import org.apache.avro.LogicalType;
import org.apache.avro.Schema;
import org.apache.avro.data.TimeConversions;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.io.JsonEncoder;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;

public final class RegistrySerde {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        if (args.length != 1) throw new IllegalArgumentException("usage: RegistrySerde <registry base URL, e.g. http://127.0.0.1:8080>");
        Map<String, Object> common = new HashMap<>();
        common.put("apicurio.registry.url", args[0].replaceAll("/$", "") + "/apis/registry/v3");
        // The Confluent framing: Apicurio 3's defaults already write magic byte 0 and a 4-byte content id
        // in the value (Default4ByteIdHandler, use-id contentId, headers off); set so a change of default shows.
        common.put("apicurio.registry.id-handler", "io.apicurio.registry.serde.Default4ByteIdHandler");
        common.put("apicurio.registry.use-id", "contentId");
        common.put("apicurio.registry.headers.enabled", false);
        common.put("apicurio.registry.find-latest", true);
        common.put("apicurio.registry.auto-register", false);
        common.put("apicurio.registry.serde.send-type-ref", false);
        common.put("apicurio.registry.serde.send-indexes", true);
        common.put("apicurio.registry.serde.read-type-ref", false);
        common.put("apicurio.registry.serde.read-indexes", true);

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            ObjectNode out = JSON.createObjectNode();
            try {
                JsonNode req = JSON.readTree(line);
                String op = req.path("op").asText();
                if (op.equals("serialize")) out.put("hex", HEX.formatHex(serialize(common, req)));
                else if (op.equals("deserialize")) out.set("value", deserialize(common, req, out));
                else throw new IllegalArgumentException("unknown op " + op);
            } catch (Exception e) {
                out.put("error", e.toString() + (e.getCause() != null ? " caused by " + e.getCause() : "")); if (System.getenv("SERDE_TRACE") != null) e.printStackTrace();
            }
            System.out.println(JSON.writeValueAsString(out));
            System.out.flush();
        }
    }

    private static GenericData avroData() {
        // Conversions both ways: the deserializer may hand back converted values (BigDecimal, Instant, ...),
        // which the JSON writer turns back into their Avro types; raw values pass through.
        GenericData data = new GenericData();
        data.addLogicalTypeConversion(new Conversions.DecimalConversion());
        data.addLogicalTypeConversion(new Conversions.UUIDConversion());
        data.addLogicalTypeConversion(new TimeConversions.DateConversion());
        data.addLogicalTypeConversion(new TimeConversions.TimeMillisConversion());
        data.addLogicalTypeConversion(new TimeConversions.TimeMicrosConversion());
        data.addLogicalTypeConversion(new TimeConversions.TimestampMillisConversion());
        data.addLogicalTypeConversion(new TimeConversions.TimestampMicrosConversion());
        data.addLogicalTypeConversion(new TimeConversions.LocalTimestampMillisConversion());
        data.addLogicalTypeConversion(new TimeConversions.LocalTimestampMicrosConversion());
        return data;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static byte[] serialize(Map<String, Object> common, JsonNode req) throws Exception {
        String topic = req.path("topic").asText();
        String format = req.path("format").asText();
        Map<String, Object> config = new HashMap<>(common);
        Object value;
        Serializer serializer;
        switch (format) {
            case "avro" -> {
                Schema schema = new Schema.Parser().parse(req.path("schema").asText());
                String json = JSON.writeValueAsString(req.path("value"));
                value = new GenericDatumReader<Object>(schema).read(null, DecoderFactory.get().jsonDecoder(schema, json));
                serializer = new AvroKafkaSerializer<>();
            }
            case "protobuf" -> {
                DynamicMessage.Builder b = DynamicMessage.newBuilder(protoMessage(req));
                JsonFormat.parser().merge(JSON.writeValueAsString(req.path("value")), b);
                value = b.build();
                // Its check that the message is in the schema looks among the top-level messages only, so it
                // refuses every nested one ("Missing message type").
                config.put("apicurio.registry.serde.validation-enabled", false);
                serializer = new ProtobufKafkaSerializer<>();
            }
            case "json" -> {
                value = req.path("value");
                serializer = new JsonSchemaKafkaSerializer<>();
            }
            default -> throw new IllegalArgumentException("unknown format " + format);
        }
        try (serializer) {
            serializer.configure(config, false);
            return serializer.serialize(topic, new RecordHeaders(), value);
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static JsonNode deserialize(Map<String, Object> common, JsonNode req, ObjectNode out) throws Exception {
        String topic = req.path("topic").asText();
        String format = req.path("format").asText();
        byte[] bytes = HEX.parseHex(req.path("hex").asText());
        Map<String, Object> config = new HashMap<>(common);
        RecordHeaders headers = new RecordHeaders();
        Deserializer deserializer;
        switch (format) {
            case "avro" -> deserializer = new AvroKafkaDeserializer<>();
            case "json" -> deserializer = new JsonSchemaKafkaDeserializer<>();
            case "protobuf" -> {
                Descriptor d = protoMessage(req);
                if (d.getContainingType() != null) return JSON.readTree(printProto(nested(bytes, d)));
                // Apicurio finds the message by its unqualified name among the file's top-level messages.
                config.put("apicurio.registry.deserializer.value.return-class", DynamicMessage.class.getName());
                headers.add("apicurio.value.msgType", d.getName().getBytes(StandardCharsets.UTF_8));
                deserializer = new ProtobufKafkaDeserializer<>();
            }
            default -> throw new IllegalArgumentException("unknown format " + format);
        }
        try (deserializer) {
            deserializer.configure(config, false);
            Object v = deserializer.deserialize(topic, headers, bytes);
            return switch (format) {
                case "avro" -> {
                    GenericData.Record r = (GenericData.Record) v;
                    ByteArrayOutputStream buf = new ByteArrayOutputStream();
                    JsonEncoder enc = EncoderFactory.get().jsonEncoder(r.getSchema(), buf);
                    GenericData data = avroData();
                    new GenericDatumWriter<Object>(r.getSchema(), data).write(r, enc);
                    enc.flush();
                    out.set("logical", logical(r, data));
                    yield JSON.readTree(buf.toByteArray());
                }
                case "protobuf" -> JSON.readTree(printProto((DynamicMessage) v));
                default -> JSON.valueToTree(v);
            };
        }
    }

    /** Avro's own conversion of each top-level field that has a logical type, as text. */
    private static ObjectNode logical(GenericData.Record r, GenericData data) {
        ObjectNode o = JSON.createObjectNode();
        for (Schema.Field f : r.getSchema().getFields()) {
            LogicalType type = f.schema().getLogicalType();
            if (type == null) continue;
            Object v = r.get(f.pos());
            Conversion<?> c = data.getConversionByClass(v.getClass(), type);
            o.put(f.name(), String.valueOf(c != null ? v : Conversions.convertToLogicalType(v, f.schema(), type, data.getConversionFor(type))));
        }
        return o;
    }

    /**
     * Apicurio's deserializer reads the message indexes and drops them: it cannot pick a nested message. The
     * reverse check reads those the same way (MessageIndexesUtil) and checks they lead to the message asked for.
     */
    private static DynamicMessage nested(byte[] bytes, Descriptor d) throws Exception {
        if (bytes[0] != 0) throw new IllegalStateException("magic byte " + bytes[0]);
        ByteArrayInputStream is = new ByteArrayInputStream(bytes, 5, bytes.length - 5);
        List<Integer> indexes = MessageIndexesUtil.readFrom(is);
        Descriptor at = d.getFile().getMessageTypes().get(indexes.get(0));
        for (int i = 1; i < indexes.size(); i++) at = at.getNestedTypes().get(indexes.get(i));
        if (at != d) throw new IllegalStateException("indexes " + indexes + " name " + at.getFullName() + ", not " + d.getFullName());
        return DynamicMessage.parseFrom(d, is);
    }

    private static String printProto(DynamicMessage m) throws Exception {
        return JsonFormat.printer().preservingProtoFieldNames().omittingInsignificantWhitespace().print(m);
    }

    private static Descriptor protoMessage(JsonNode req) throws Exception {
        String text = req.path("schema").asText();
        FileDescriptor fd = FileDescriptorUtils.protoFileToFileDescriptor(text, "main.proto", Optional.empty());
        // Without its package it lists every nested message among the top-level ones as well.
        if (!fd.getPackage().isEmpty()) fd = FileDescriptorUtils.protoFileToFileDescriptor(text, "main.proto", Optional.of(fd.getPackage()));
        String name = req.path("message").asText();
        String rel = fd.getPackage().isEmpty() ? name : name.substring(fd.getPackage().length() + 1);
        String[] parts = rel.split("\\.");
        Descriptor d = fd.findMessageTypeByName(parts[0]);
        for (int i = 1; d != null && i < parts.length; i++) d = d.findNestedTypeByName(parts[i]);
        if (d == null) throw new IllegalArgumentException("no message " + name);
        return d;
    }
}
