// Reference producer for tests (the Java producer, NOT kafka-edge): writes records read from stdin.
//
//   node scripts/kafka/kafka.mjs tool Produce <bootstrap> <topic> [options] < records.jsonl
//     --set key=value         any producer config (repeatable), e.g. --set compression.type=lz4
//     --transactional-id ID   one transaction around all records; --abort aborts it instead of committing
//     --sasl MECHANISM USER PASSWORD   (OAUTHBEARER: an unsecured token with sub=USER)
//     --prop key=value        same as --set, applied after --sasl (e.g. security.protocol=SASL_SSL, ssl.*)
//
// stdin: one JSON object per line {"key":b64|null,"value":b64|null,"headers":[{"key":"k","value":b64|null}],
// "partition":p?,"timestamp":ms?} (missing key/value = null). stdout: one line per record, in input order:
// {"partition":p,"offset":o,"timestamp":t}. Exits 1 if any send fails.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Produce {
    static byte[] bytes(JsonNode n) { return n == null || n.isNull() ? null : Base64.getDecoder().decode(n.asText()); }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) { System.err.println("usage: Produce <bootstrap> <topic> [options]"); System.exit(2); }
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", "kafka-edge-reference-producer");
        String topic = args[1];
        boolean abort = false;
        Properties extra = new Properties();
        for (int i = 2; i < args.length; i++) {
            switch (args[i]) {
                case "--set": case "--prop": ToolArgs.prop(extra, args[++i]); break;
                case "--transactional-id": p.put("transactional.id", args[++i]); break;
                case "--abort": abort = true; break;
                case "--sasl": ToolArgs.sasl(p, args[i + 1], args[i + 2], args[i + 3]); i += 3; break;
                default: System.err.println("unknown option " + args[i]); System.exit(2);
            }
        }
        p.putAll(extra);
        ObjectMapper om = new ObjectMapper();
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode n = om.readTree(line);
            List<org.apache.kafka.common.header.Header> headers = new ArrayList<>();
            if (n.has("headers")) for (JsonNode h : n.get("headers")) headers.add(new RecordHeader(h.get("key").asText(), bytes(h.get("value"))));
            Integer partition = n.has("partition") && !n.get("partition").isNull() ? n.get("partition").asInt() : null;
            Long ts = n.has("timestamp") && !n.get("timestamp").isNull() ? n.get("timestamp").asLong() : null;
            recs.add(new ProducerRecord<>(n.has("topic") ? n.get("topic").asText() : topic, partition, ts, bytes(n.get("key")), bytes(n.get("value")), headers));
        }
        boolean tx = p.containsKey("transactional.id");
        StringBuilder out = new StringBuilder();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            if (tx) { producer.initTransactions(); producer.beginTransaction(); }
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (ProducerRecord<byte[], byte[]> r : recs) fs.add(producer.send(r));
            producer.flush();
            for (Future<RecordMetadata> f : fs) {
                RecordMetadata md = f.get();
                out.append("{\"partition\":").append(md.partition()).append(",\"offset\":").append(md.offset())
                    .append(",\"timestamp\":").append(md.timestamp()).append("}\n");
            }
            if (tx) { if (abort) producer.abortTransaction(); else producer.commitTransaction(); }
        }
        System.out.print(out);
    }
}
