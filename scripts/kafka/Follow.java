// Follows a topic with the Java consumer and says which producer wrote each record: `npm start`
// streams its output to the demo page's live panel.
//
//   node scripts/kafka/kafka.mjs tool Follow <bootstrap> <topic> <logDir>
//        [--isolation read_committed|read_uncommitted] [--prop key=value ...]
//
// Assigns every partition, reads from the beginning and keeps polling until stdin closes or the
// process is stopped. One JSON line per record, as soon as the consumer returns it:
//   {"partition":p,"offset":o,"timestamp":t,"value":b64|null,
//    "producerId":id,"producerEpoch":e,"sequence":s}
// The consumer API does not expose a record's batch header, so the producer id, epoch and sequence
// come from the broker's own log segments in <logDir>/<topic>-<p> (a one-node cluster's log.dirs),
// read with Kafka's FileRecords, as DumpLogSegments reads them. A record's sequence is its batch's
// base sequence plus its place in the batch. -1 when the batch was not found (a segment deleted).
import java.io.File;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class Follow {
    /** The batch headers of one partition, read from its segments; reread when an offset is past them. */
    static final class PartitionLog {
        final File dir;
        final TreeMap<Long, long[]> byBaseOffset = new TreeMap<>(); // baseOffset -> {lastOffset, producerId, epoch, baseSequence}

        PartitionLog(File dir) { this.dir = dir; }

        long[] batchOf(long offset) throws Exception {
            long[] b = find(offset);
            if (b == null) { reread(); b = find(offset); }
            return b;
        }

        private long[] find(long offset) {
            Map.Entry<Long, long[]> e = byBaseOffset.floorEntry(offset);
            return e != null && e.getValue()[0] >= offset ? e.getValue() : null;
        }

        private void reread() throws Exception {
            File[] segments = dir.listFiles((d, n) -> n.endsWith(".log"));
            if (segments == null) return;
            for (File f : segments) {
                // Opened read-only at its current size: a batch still being appended is left for the next read.
                try (FileRecords fr = FileRecords.open(f, false)) {
                    for (FileChannelRecordBatch b : fr.batches()) {
                        if (b.isControlBatch()) continue;
                        byBaseOffset.put(b.baseOffset(), new long[] { b.lastOffset(), b.producerId(), b.producerEpoch(), b.baseSequence() });
                    }
                }
            }
        }
    }

    static String b64(byte[] b) { return b == null ? "null" : "\"" + Base64.getEncoder().encodeToString(b) + "\""; }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) { System.err.println("usage: Follow <bootstrap> <topic> <logDir> [options]"); System.exit(2); }
        String bootstrap = args[0], topic = args[1];
        File logDir = new File(args[2]);
        String isolation = "read_uncommitted";
        Properties p = new Properties();
        Properties extra = new Properties();
        for (int i = 3; i < args.length; i++) {
            switch (args[i]) {
                case "--isolation": isolation = args[++i]; break;
                case "--prop": ToolArgs.prop(extra, args[++i]); break;
                default: System.err.println("unknown option " + args[i]); System.exit(2);
            }
        }
        p.putAll(extra);
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("client.id", "kafka-edge-follow");
        // Whoever started this closes stdin to stop it; a parent that died closes it too.
        Thread stdin = new Thread(() -> {
            try { while (System.in.read() >= 0) { /* ignore input */ } } catch (Exception ignored) { }
            System.exit(0);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) { System.err.println("topic " + topic + " not found"); System.exit(4); }
            List<TopicPartition> tps = new ArrayList<>();
            Map<Integer, PartitionLog> logs = new HashMap<>();
            for (PartitionInfo pi : infos) {
                tps.add(new TopicPartition(topic, pi.partition()));
                logs.put(pi.partition(), new PartitionLog(new File(logDir, topic + "-" + pi.partition())));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            System.out.println("{\"ready\":true,\"partitions\":" + tps.size() + "}");
            System.out.flush();
            while (true) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) continue;
                StringBuilder out = new StringBuilder();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    long[] b = logs.get(r.partition()).batchOf(r.offset());
                    long pid = b == null ? -1 : b[1], epoch = b == null ? -1 : b[2];
                    long seq = b == null || b[3] < 0 ? -1 : b[3] + (r.offset() - logs.get(r.partition()).byBaseOffset.floorKey(r.offset()));
                    out.append("{\"partition\":").append(r.partition())
                        .append(",\"offset\":").append(r.offset())
                        .append(",\"timestamp\":").append(r.timestamp())
                        .append(",\"value\":").append(b64(r.value()))
                        .append(",\"producerId\":").append(pid)
                        .append(",\"producerEpoch\":").append(epoch)
                        .append(",\"sequence\":").append(seq)
                        .append("}\n");
                }
                System.out.print(out);
                System.out.flush();
            }
        }
    }
}
