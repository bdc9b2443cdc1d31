// The Java producer as a peer in `npm run bench -- faults`: the same keyed workload as the Node
// peers (bench/faults.ts), one send() per record with a callback, and the same outcome lines.
//
//   java -cp '.kafka/libs/*' bench/java/FaultProduce.java <bootstrap> <topic> <records/s> <partitions> <keys> <valueBytes> [key=value ...]
//
// Prints READY once it has the topic's metadata, sends until a line arrives on stdin (or stdin
// closes), then waits up to settle ms (default 150000) for the callbacks and prints, one per record: "A i partition offset", "F i claim name: message"
// or "P i" (never settled), then "DONE".
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class FaultProduce {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        double rate = Double.parseDouble(args[2]);
        int partitions = Integer.parseInt(args[3]), keys = Integer.parseInt(args[4]), valueBytes = Integer.parseInt(args[5]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "bench-faults-java");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        long settleMs = 150_000;
        for (int i = 6; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            String k = args[i].substring(0, eq), v = args[i].substring(eq + 1);
            if (k.equals("settle.ms")) settleMs = Long.parseLong(v); else p.put(k, v);
        }
        int[] partitionOfKey = new int[keys];
        String[] partitionArg = System.getenv("BENCH_PARTITION_OF_KEY").split(",");
        for (int k = 0; k < keys; k++) partitionOfKey[k] = Integer.parseInt(partitionArg[k]);

        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try { new BufferedReader(new InputStreamReader(System.in)).readLine(); } catch (IOException e) { }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        List<String[]> outcome = new ArrayList<>();
        ConcurrentHashMap<Integer, String> settled = new ConcurrentHashMap<>();
        AtomicInteger pending = new AtomicInteger();
        int[] seqs = new int[keys];
        int n = 0;
        long start = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            // The fault schedule starts once the peer can send: metadata in hand.
            producer.partitionsFor(topic);
            System.out.println("READY");
            System.out.flush();
            start = System.nanoTime();
            while (!stop.get()) {
                int i = n++;
                int k = i % keys;
                String key = "key-" + k;
                StringBuilder v = new StringBuilder(i + "|" + key + "|" + (seqs[k]++) + "|");
                while (v.length() < valueBytes) v.append('.');
                pending.incrementAndGet();
                try {
                    producer.send(new ProducerRecord<>(topic, partitionOfKey[k], key.getBytes(StandardCharsets.UTF_8), v.toString().getBytes(StandardCharsets.UTF_8)), (md, e) -> {
                        if (e == null) settled.put(i, "A " + i + " " + md.partition() + " " + md.offset());
                        else settled.put(i, "F " + i + " none " + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' '));
                        pending.decrementAndGet();
                    });
                } catch (Exception e) {
                    settled.put(i, "F " + i + " none " + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' '));
                    pending.decrementAndGet();
                }
                long ahead = (long) (i / rate * 1e9) - (System.nanoTime() - start);
                if (ahead > 1_000_000) Thread.sleep(ahead / 1_000_000);
            }
            long deadline = System.currentTimeMillis() + settleMs;
            while (pending.get() > 0 && System.currentTimeMillis() < deadline) Thread.sleep(100);
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < n; i++) out.append(settled.getOrDefault(i, "P " + i)).append('\n');
            out.append("DONE\n");
            System.out.print(out);
            System.out.flush();
            producer.close(java.time.Duration.ofMillis(0));
        }
        System.exit(0);
    }
}
