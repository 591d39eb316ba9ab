// The Java client's side of the compat harness (compat/clients/java.py): one command per run,
// records exchanged as hex on stdin/stdout so any bytes survive. Compiled at run time against
// the kafka-clients jar given with --java-classpath; uses only long-stable kafka-clients API.
//
//   metadata   BOOTSTRAP [TOPIC...]                       -> B id host port | T topic partition leader | C controller
//   produce    BOOTSTRAP TOPIC ACKS CODEC IDEMPOTENT MAXREQ TIMEOUTMS   (stdin: R lines) -> OK p o | ERR name msg
//   consume    BOOTSTRAP TOPIC PARTITION OFFSET MAX TIMEOUTMS [ISOLATION]  -> M topic p offset ts key value headers
//   txn        BOOTSTRAP TRANSACTIONALID TIMEOUTMS   a transactional producer driven line by line on stdin:
//              initTransactions, then per command one answer line (OK | ERR name msg):
//              B (begin) | C (commit) | A (abort) | O GROUP TOPIC:PARTITION:OFFSET... (sendOffsetsToTransaction)
//              | S TOPIC N, then N R lines (send, flush: N answers OK p o | ERR name msg)
//   offsets    BOOTSTRAP SPEC TOPIC:PARTITION...   (SPEC earliest|latest|<ms>) -> O topic p offset
//   create     BOOTSTRAP TOPIC PARTITIONS RF | delete BOOTSTRAP TOPIC
//   cluster    BOOTSTRAP                                  -> I clusterId | C controller | B id host port
// R line: "R partition|- timestamp|- key|- value|- name=hex,..." (hex; "-" = null).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class CompatClient {
    static String hex(byte[] b) {
        if (b == null) return "-";
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.length() == 0 ? "" : s.toString();
    }

    static byte[] unhex(String s) {
        if (s.equals("-")) return null;
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static Properties props(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static String errorName(Throwable t) {
        while (t.getCause() != null && !(t instanceof ApiException)) t = t.getCause();
        if (t instanceof ApiException) return Errors.forException(t).name();
        return t.getClass().getSimpleName();
    }

    public static void main(String[] a) throws Exception {
        switch (a[0]) {
            case "metadata" -> metadata(a);
            case "produce" -> produce(a);
            case "consume" -> consume(a);
            case "txn" -> txn(a);
            case "offsets" -> offsets(a);
            case "create" -> { try (Admin admin = Admin.create(props(a[1]))) {
                admin.createTopics(List.of(new NewTopic(a[2], Integer.parseInt(a[3]), Short.parseShort(a[4]))))
                    .all().get(30, TimeUnit.SECONDS); } }
            case "delete" -> { try (Admin admin = Admin.create(props(a[1]))) {
                admin.deleteTopics(List.of(a[2])).all().get(30, TimeUnit.SECONDS); } }
            case "cluster" -> { try (Admin admin = Admin.create(props(a[1]))) {
                DescribeClusterResult r = admin.describeCluster();
                System.out.println("I " + r.clusterId().get(30, TimeUnit.SECONDS));
                System.out.println("C " + r.controller().get(30, TimeUnit.SECONDS).id());
                for (Node n : r.nodes().get(30, TimeUnit.SECONDS))
                    System.out.println("B " + n.id() + " " + n.host() + " " + n.port()); } }
            default -> throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    static void metadata(String[] a) throws Exception {
        try (Admin admin = Admin.create(props(a[1]))) {
            DescribeClusterResult c = admin.describeCluster();
            for (Node n : c.nodes().get(30, TimeUnit.SECONDS))
                System.out.println("B " + n.id() + " " + n.host() + " " + n.port());
            System.out.println("C " + c.controller().get(30, TimeUnit.SECONDS).id());
            Collection<String> names = a.length > 2 ? Arrays.asList(a).subList(2, a.length)
                : admin.listTopics().names().get(30, TimeUnit.SECONDS);
            for (String name : names) {
                try {
                    TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames()
                        .get(30, TimeUnit.SECONDS).get(name);
                    for (TopicPartitionInfo p : d.partitions())
                        System.out.println("T " + name + " " + p.partition() + " " + (p.leader() == null ? -1 : p.leader().id()));
                } catch (java.util.concurrent.ExecutionException e) {
                    if (!"UNKNOWN_TOPIC_OR_PARTITION".equals(errorName(e))) throw e;
                }
            }
        }
    }

    static void produce(String[] a) throws Exception {
        Properties p = props(a[1]);
        p.put("acks", a[3].equals("-1") ? "all" : a[3]);
        p.put("compression.type", a[4]);
        p.put("enable.idempotence", a[5]);
        p.put("max.request.size", a[6]);
        p.put("delivery.timeout.ms", a[7]);
        p.put("request.timeout.ms", a[7]);
        p.put("max.block.ms", a[7]);
        p.put("linger.ms", "5");
        List<java.util.concurrent.Future<RecordMetadata>> futures = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isEmpty()) continue;
                futures.add(producer.send(record(a[2], line)));
            }
            producer.flush();
            report(futures, Long.parseLong(a[7]));
        }
    }

    // An R line as a record for TOPIC.
    static ProducerRecord<byte[], byte[]> record(String topic, String line) {
        String[] f = line.split(" ", -1);
        Integer partition = f[1].equals("-") ? null : Integer.valueOf(f[1]);
        Long ts = f[2].equals("-") ? null : Long.valueOf(f[2]);
        List<Header> headers = new ArrayList<>();
        if (f.length > 5 && !f[5].isEmpty())
            for (String h : f[5].split(",")) {
                String[] kv = h.split("=", 2);
                headers.add(new RecordHeader(kv[0], unhex(kv[1])));
            }
        return new ProducerRecord<>(topic, partition, ts, unhex(f[3]), unhex(f[4]), headers);
    }

    static String err(Exception e) {
        return "ERR " + errorName(e) + " " + String.valueOf(e.getMessage()).replace('\n', ' ');
    }

    // One answer line per sent record, in order.
    static void report(List<java.util.concurrent.Future<RecordMetadata>> futures, long timeoutMs) {
        for (var fut : futures) {
            try {
                RecordMetadata md = fut.get(timeoutMs, TimeUnit.MILLISECONDS);
                System.out.println("OK " + md.partition() + " " + (md.hasOffset() ? md.offset() : -1));
            } catch (Exception e) {
                System.out.println(err(e));
            }
        }
    }

    static void txn(String[] a) throws Exception {
        Properties p = props(a[1]);
        p.put("transactional.id", a[2]);
        p.put("delivery.timeout.ms", a[3]);
        p.put("request.timeout.ms", a[3]);
        p.put("max.block.ms", a[3]);
        p.put("linger.ms", "5");
        long timeoutMs = Long.parseLong(a[3]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            try {
                producer.initTransactions();
                System.out.println("OK");
            } catch (Exception e) {
                System.out.println(err(e));
                return;
            }
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.split(" ");
                try {
                    switch (f[0]) {
                        case "B" -> producer.beginTransaction();
                        case "C" -> producer.commitTransaction();
                        case "A" -> producer.abortTransaction();
                        case "O" -> {
                            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                            for (int i = 2; i < f.length; i++) {
                                String[] tpo = f[i].split(":");
                                offsets.put(new TopicPartition(tpo[0], Integer.parseInt(tpo[1])),
                                    new OffsetAndMetadata(Long.parseLong(tpo[2])));
                            }
                            producer.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(f[1]));
                        }
                        case "S" -> {
                            List<java.util.concurrent.Future<RecordMetadata>> futures = new ArrayList<>();
                            int n = Integer.parseInt(f[2]);
                            for (int i = 0; i < n; i++) futures.add(producer.send(record(f[1], in.readLine())));
                            producer.flush();
                            report(futures, timeoutMs);
                            continue;
                        }
                        default -> throw new IllegalArgumentException("unknown txn command " + f[0]);
                    }
                    System.out.println("OK");
                } catch (Exception e) {
                    System.out.println(err(e));
                }
                System.out.flush();
            }
        }
    }

    static void consume(String[] a) {
        Properties p = props(a[1]);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        if (a.length > 7) p.put("isolation.level", a[7]);
        TopicPartition tp = new TopicPartition(a[2], Integer.parseInt(a[3]));
        long offset = Long.parseLong(a[4]);
        int max = Integer.parseInt(a[5]);
        long deadline = System.currentTimeMillis() + Long.parseLong(a[6]);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.assign(List.of(tp));
            if (offset >= 0) c.seek(tp, offset); else c.seekToBeginning(List.of(tp));
            int n = 0;
            while (n < max && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    if (n++ >= max) break;
                    StringBuilder hs = new StringBuilder();
                    for (Header h : r.headers()) {
                        if (hs.length() > 0) hs.append(',');
                        hs.append(h.key()).append('=').append(h.value() == null ? "" : hex(h.value()));
                    }
                    System.out.println("M " + r.topic() + " " + r.partition() + " " + r.offset() + " " + r.timestamp()
                        + " " + hex(r.key()) + " " + hex(r.value()) + " " + hs);
                }
            }
        }
    }

    static void offsets(String[] a) throws Exception {
        OffsetSpec spec = switch (a[2]) {
            case "earliest" -> OffsetSpec.earliest();
            case "latest" -> OffsetSpec.latest();
            default -> OffsetSpec.forTimestamp(Long.parseLong(a[2]));
        };
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (int i = 3; i < a.length; i++) {
            int colon = a[i].lastIndexOf(':');
            req.put(new TopicPartition(a[i].substring(0, colon), Integer.parseInt(a[i].substring(colon + 1))), spec);
        }
        try (Admin admin = Admin.create(props(a[1]))) {
            var all = admin.listOffsets(req).all().get(30, TimeUnit.SECONDS);
            for (var e : all.entrySet())
                System.out.println("O " + e.getKey().topic() + " " + e.getKey().partition() + " " + e.getValue().offset());
        }
    }
}
