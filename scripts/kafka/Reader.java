// Independent reader for tests: the Java consumer reads a topic from the beginning.
//
//   node scripts/kafka/kafka.mjs tool Reader <bootstrap> <topic>
//        [--isolation read_committed|read_uncommitted] [--expected N] [--timeout MS]
//        [--sasl MECHANISM USER PASSWORD] [--prop key=value ...] [--end-offsets] [--group GROUP]
//
// Default: assign every partition, seekToBeginning, read until the end offsets taken at start are
// reached (with --expected N: until N records were read and the then-current end offsets are
// reached; exit 3 on timeout after printing what was read). One JSON line per record on stdout:
//   {"partition":p,"offset":o,"timestamp":t,"timestampType":"CreateTime","key":b64|null,
//    "value":b64|null,"headers":[{"key":"utf8","value":b64|null}]}
// --end-offsets prints {"<partition>": endOffset, ...} (isolation-aware: read_committed gives the LSO).
// --group G prints the group's committed offsets {"<partition>": {"offset":o,"metadata":"..."}|null}.
// --prop key=value (repeatable): any consumer config, applied after --sasl, e.g. security.protocol=SSL,
// ssl.truststore.type=PEM, ssl.truststore.location=..., ssl.keystore.type=PEM, ssl.keystore.location=...
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class Reader {
    static String b64(byte[] b) { return b == null ? "null" : "\"" + Base64.getEncoder().encodeToString(b) + "\""; }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) { System.err.println("usage: Reader <bootstrap> <topic> [options]"); System.exit(2); }
        String bootstrap = args[0], topic = args[1];
        String isolation = "read_committed";
        long expected = -1, timeoutMs = 30000;
        String group = null;
        boolean endOnly = false;
        Properties p = new Properties();
        Properties extra = new Properties();
        for (int i = 2; i < args.length; i++) {
            switch (args[i]) {
                case "--isolation": isolation = args[++i]; break;
                case "--expected": expected = Long.parseLong(args[++i]); break;
                case "--timeout": timeoutMs = Long.parseLong(args[++i]); break;
                case "--group": group = args[++i]; break;
                case "--end-offsets": endOnly = true; break;
                case "--sasl": ToolArgs.sasl(p, args[i + 1], args[i + 2], args[i + 3]); i += 3; break;
                case "--prop": ToolArgs.prop(extra, args[++i]); break;
                default: System.err.println("unknown option " + args[i]); System.exit(2);
            }
        }
        p.putAll(extra);
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("client.id", "kafka-edge-reader");
        p.put("max.poll.records", "5000");
        if (group != null) p.put("group.id", group);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofMillis(timeoutMs));
            if (infos == null || infos.isEmpty()) { System.err.println("topic " + topic + " not found"); System.exit(4); }
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : infos) tps.add(new TopicPartition(topic, pi.partition()));
            tps.sort(Comparator.comparingInt(TopicPartition::partition));
            if (group != null) {
                Map<TopicPartition, OffsetAndMetadata> committed = c.committed(new HashSet<>(tps), Duration.ofMillis(timeoutMs));
                StringBuilder sb = new StringBuilder("{");
                for (TopicPartition tp : tps) {
                    if (sb.length() > 1) sb.append(',');
                    OffsetAndMetadata om = committed.get(tp);
                    sb.append('"').append(tp.partition()).append("\":");
                    sb.append(om == null ? "null" : "{\"offset\":" + om.offset() + ",\"metadata\":" + ToolArgs.json(om.metadata()) + "}");
                }
                System.out.println(sb.append('}'));
                return;
            }
            c.assign(tps);
            if (endOnly) {
                Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofMillis(timeoutMs));
                StringBuilder sb = new StringBuilder("{");
                for (TopicPartition tp : tps) {
                    if (sb.length() > 1) sb.append(',');
                    sb.append('"').append(tp.partition()).append("\":").append(end.get(tp));
                }
                System.out.println(sb.append('}'));
                return;
            }
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + timeoutMs;
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofMillis(timeoutMs));
            long count = 0;
            StringBuilder out = new StringBuilder();
            while (true) {
                boolean atEnd = true;
                for (TopicPartition tp : tps) if (c.position(tp, Duration.ofMillis(timeoutMs)) < end.get(tp)) { atEnd = false; break; }
                if (atEnd) {
                    if (expected < 0 || count >= expected) {
                        // with --expected, re-check the end once the count is reached so extra records show up
                        if (expected >= 0) {
                            Map<TopicPartition, Long> now = c.endOffsets(tps, Duration.ofMillis(timeoutMs));
                            if (!now.equals(end)) { end = now; continue; }
                        }
                        break;
                    }
                    end = c.endOffsets(tps, Duration.ofMillis(timeoutMs));
                }
                if (System.currentTimeMillis() > deadline) {
                    System.out.print(out);
                    System.out.flush();
                    System.err.println("timeout after " + timeoutMs + "ms: read " + count + " records"
                        + (expected >= 0 ? " of expected " + expected : "") + "; end offsets " + end);
                    System.exit(3);
                }
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    count++;
                    out.append("{\"partition\":").append(r.partition())
                        .append(",\"offset\":").append(r.offset())
                        .append(",\"timestamp\":").append(r.timestamp())
                        .append(",\"timestampType\":\"").append(r.timestampType().name).append('"')
                        .append(",\"key\":").append(b64(r.key()))
                        .append(",\"value\":").append(b64(r.value()))
                        .append(",\"headers\":[");
                    boolean first = true;
                    for (Header h : r.headers()) {
                        if (!first) out.append(',');
                        first = false;
                        out.append("{\"key\":").append(ToolArgs.json(h.key())).append(",\"value\":").append(b64(h.value())).append('}');
                    }
                    out.append("]}\n");
                }
                if (out.length() > 1 << 20) { System.out.print(out); out.setLength(0); }
            }
            System.out.print(out);
            System.out.flush();
        }
    }
}
