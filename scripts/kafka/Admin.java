// Admin helper for tests (Java AdminClient). JSON on stdout, errors on stderr, exit 1 on failure.
//
//   node scripts/kafka/kafka.mjs tool Admin <command> ... [--sasl MECHANISM USER PASSWORD] [--prop key=value ...]
//
//   --prop (repeatable): any AdminClient config, applied after --sasl (security.protocol=SSL, ssl.*, ...)
//
//   create-topic   <bootstrap> <topic> <partitions> <rf> [minIsr|-] [name=value ...]
//                                         topic configs; waits until every partition has a leader
//   delete-topic   <bootstrap> <topic>                              waits until the topic is gone
//   leaders        <bootstrap> <topic>                              {"0": leaderId, ...} (-1 = none)
//   describe-topic <bootstrap> <topic>                              [{"partition","leader","replicas","isr"}]
//   partition-for  <numPartitions>        stdin: base64 keys, one per line -> one partition per line
//                                         (BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % n)
//   features       <bootstrap>                                      {"finalized":{name:maxLevel},"supported":{name:{min,max}}}
//   group-offsets  <bootstrap> <group>                              [{"topic","partition","offset","metadata"}]
//   cluster        <bootstrap>                                      {"clusterId","controller","nodes":[ids]}
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.*;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.utils.Utils;

public class Admin {
    static Properties props = new Properties();

    static org.apache.kafka.clients.admin.Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.putAll(props);
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kafka-edge-admin");
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "60000");
        return org.apache.kafka.clients.admin.Admin.create(p);
    }

    static Map<Integer, TopicPartitionInfo> describe(org.apache.kafka.clients.admin.Admin a, String topic) throws Exception {
        TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        Map<Integer, TopicPartitionInfo> m = new TreeMap<>();
        for (TopicPartitionInfo pi : d.partitions()) m.put(pi.partition(), pi);
        return m;
    }

    static String ids(List<Node> nodes) {
        StringBuilder sb = new StringBuilder("[");
        for (Node n : nodes) { if (sb.length() > 1) sb.append(','); sb.append(n.id()); }
        return sb.append(']').toString();
    }

    public static void main(String[] argv) throws Exception {
        List<String> args = new ArrayList<>();
        Properties extra = new Properties();
        for (int i = 0; i < argv.length; i++) {
            if (argv[i].equals("--sasl")) { ToolArgs.sasl(props, argv[i + 1], argv[i + 2], argv[i + 3]); i += 3; }
            else if (argv[i].equals("--prop")) ToolArgs.prop(extra, argv[++i]);
            else args.add(argv[i]);
        }
        props.putAll(extra);
        if (args.isEmpty()) { System.err.println("usage: Admin <command> ..."); System.exit(2); }
        try {
            run(args);
        } catch (ExecutionException e) {
            System.err.println(args.get(0) + " failed: " + e.getCause());
            System.exit(1);
        }
    }

    static void run(List<String> args) throws Exception {
        String cmd = args.get(0);
        switch (cmd) {
            case "partition-for": {
                int n = Integer.parseInt(args.get(1));
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                StringBuilder out = new StringBuilder();
                String line;
                while ((line = in.readLine()) != null) {
                    byte[] key = Base64.getDecoder().decode(line.trim());
                    // org.apache.kafka.clients.producer.internals.BuiltInPartitioner.partitionForKey
                    out.append(Utils.toPositive(Utils.murmur2(key)) % n).append('\n');
                }
                System.out.print(out);
                return;
            }
            case "create-topic": {
                String bootstrap = args.get(1), topic = args.get(2);
                int partitions = Integer.parseInt(args.get(3));
                short rf = Short.parseShort(args.get(4));
                try (org.apache.kafka.clients.admin.Admin a = admin(bootstrap)) {
                    NewTopic t = new NewTopic(topic, partitions, rf);
                    Map<String, String> configs = new HashMap<>();
                    if (args.size() > 5 && !args.get(5).equals("-")) configs.put("min.insync.replicas", args.get(5));
                    for (String kv : args.subList(Math.min(6, args.size()), args.size())) {
                        int eq = kv.indexOf('=');
                        configs.put(kv.substring(0, eq), kv.substring(eq + 1));
                    }
                    t.configs(configs);
                    a.createTopics(List.of(t)).all().get();
                    long deadline = System.currentTimeMillis() + 60000;
                    while (true) {
                        try {
                            Map<Integer, TopicPartitionInfo> m = describe(a, topic);
                            boolean ok = m.size() == partitions;
                            for (TopicPartitionInfo pi : m.values())
                                ok &= pi.leader() != null && pi.leader().id() >= 0 && pi.isr().size() == rf;
                            if (ok) break;
                        } catch (ExecutionException e) {
                            if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) throw e;
                        }
                        if (System.currentTimeMillis() > deadline) throw new RuntimeException("partitions of " + topic + " have no leader after 60s");
                        Thread.sleep(100);
                    }
                    System.out.println("{\"topic\":" + ToolArgs.json(topic) + ",\"partitions\":" + partitions + ",\"replicationFactor\":" + rf + "}");
                }
                return;
            }
            case "delete-topic": {
                String bootstrap = args.get(1), topic = args.get(2);
                try (org.apache.kafka.clients.admin.Admin a = admin(bootstrap)) {
                    a.deleteTopics(List.of(topic)).all().get();
                    long deadline = System.currentTimeMillis() + 60000;
                    while (a.listTopics(new ListTopicsOptions().listInternal(false)).names().get().contains(topic)) {
                        if (System.currentTimeMillis() > deadline) throw new RuntimeException(topic + " still listed after 60s");
                        Thread.sleep(100);
                    }
                    System.out.println("{\"deleted\":" + ToolArgs.json(topic) + "}");
                }
                return;
            }
            case "leaders": case "describe-topic": {
                String bootstrap = args.get(1), topic = args.get(2);
                try (org.apache.kafka.clients.admin.Admin a = admin(bootstrap)) {
                    Map<Integer, TopicPartitionInfo> m = describe(a, topic);
                    StringBuilder sb = new StringBuilder(cmd.equals("leaders") ? "{" : "[");
                    for (TopicPartitionInfo pi : m.values()) {
                        if (sb.length() > 1) sb.append(',');
                        int leader = pi.leader() == null ? -1 : pi.leader().id();
                        if (cmd.equals("leaders")) sb.append('"').append(pi.partition()).append("\":").append(leader);
                        else sb.append("{\"partition\":").append(pi.partition()).append(",\"leader\":").append(leader)
                            .append(",\"replicas\":").append(ids(pi.replicas())).append(",\"isr\":").append(ids(pi.isr())).append('}');
                    }
                    System.out.println(sb.append(cmd.equals("leaders") ? '}' : ']'));
                }
                return;
            }
            case "features": {
                try (org.apache.kafka.clients.admin.Admin a = admin(args.get(1))) {
                    FeatureMetadata fm = a.describeFeatures().featureMetadata().get();
                    StringBuilder sb = new StringBuilder("{\"finalized\":{");
                    boolean first = true;
                    for (Map.Entry<String, FinalizedVersionRange> e : new TreeMap<>(fm.finalizedFeatures()).entrySet()) {
                        if (!first) sb.append(',');
                        first = false;
                        sb.append(ToolArgs.json(e.getKey())).append(':').append(e.getValue().maxVersionLevel());
                    }
                    sb.append("},\"supported\":{");
                    first = true;
                    for (Map.Entry<String, SupportedVersionRange> e : new TreeMap<>(fm.supportedFeatures()).entrySet()) {
                        if (!first) sb.append(',');
                        first = false;
                        sb.append(ToolArgs.json(e.getKey())).append(":{\"min\":").append(e.getValue().minVersion()).append(",\"max\":").append(e.getValue().maxVersion()).append('}');
                    }
                    sb.append("},\"finalizedEpoch\":").append(fm.finalizedFeaturesEpoch().orElse(-1L)).append('}');
                    System.out.println(sb);
                }
                return;
            }
            case "group-offsets": {
                try (org.apache.kafka.clients.admin.Admin a = admin(args.get(1))) {
                    Map<TopicPartition, OffsetAndMetadata> m = a.listConsumerGroupOffsets(args.get(2)).partitionsToOffsetAndMetadata().get();
                    List<TopicPartition> tps = new ArrayList<>(m.keySet());
                    tps.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
                    StringBuilder sb = new StringBuilder("[");
                    for (TopicPartition tp : tps) {
                        OffsetAndMetadata om = m.get(tp);
                        if (om == null) continue;
                        if (sb.length() > 1) sb.append(',');
                        sb.append("{\"topic\":").append(ToolArgs.json(tp.topic())).append(",\"partition\":").append(tp.partition())
                            .append(",\"offset\":").append(om.offset()).append(",\"metadata\":").append(ToolArgs.json(om.metadata())).append('}');
                    }
                    System.out.println(sb.append(']'));
                }
                return;
            }
            case "cluster": {
                try (org.apache.kafka.clients.admin.Admin a = admin(args.get(1))) {
                    DescribeClusterResult r = a.describeCluster();
                    List<Node> nodes = new ArrayList<>(r.nodes().get());
                    nodes.sort(Comparator.comparingInt(Node::id));
                    Node ctl = r.controller().get();
                    System.out.println("{\"clusterId\":" + ToolArgs.json(r.clusterId().get()) + ",\"controller\":" + (ctl == null ? -1 : ctl.id()) + ",\"nodes\":" + ids(nodes) + "}");
                }
                return;
            }
            default:
                System.err.println("unknown command " + cmd);
                System.exit(2);
        }
    }
}
