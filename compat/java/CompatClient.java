// The Java client's side of the compat harness (compat/clients/java.py): one JVM per adapter, answering one
// command per stdin line. Compiled at run time with javac against each kafka-clients release the matrix runs
// (realkafka.jars.kafka_clients), so it uses only API those releases share; the share consumer (Kafka 4.0+) is
// reached by reflection.
//
// Every answer is zero or more data lines, then "= OK" or "= ERR NAME message" (NAME: Kafka's error name, or
// the exception's class). Names (topics, groups, transactional ids) travel URL-encoded, bytes as hex, "-" = null.
// Handles (H id) name the producers and consumers a command opened; "close H" ends one.
//
//   metadata [TOPIC...]           -> B id host port | C controller | T topic partition leader | E topic errorcode
//   cluster                       -> I clusterId | C controller | B id host port
//   producer ACKS CODEC IDEMPOTENT MAXREQ TIMEOUTMS  -> H id
//   txn TRANSACTIONALID TIMEOUTMS -> H id (after initTransactions)
//   send H TOPIC N, then N R lines -> per record D partition offset | F NAME message
//   begin H | commit H | abort H | offsets H CONSUMER TOPIC:PARTITION:OFFSET...  (transactions)
//   consumer GROUP|- INSTANCE|- RESET AUTOCREATE ISOLATION|- PROTOCOL TOPIC,...|- TOPIC:PARTITION,...|-  -> H id
//   poll H MAX TIMEOUTMS          -> M topic partition offset timestamp key value name=hex,...
//   assignment H                  -> A topic partition
//   commit_offsets H TOPIC:PARTITION:OFFSET:METAHEX... | committed H TOPIC:PARTITION... -> K topic partition offset|- meta|-
//   seek H TOPIC:PARTITION:OFFSET | pause H TOPIC:PARTITION... | resume H TOPIC:PARTITION...
//   share GROUP TOPIC,...         -> H id (a KafkaShareConsumer; poll H as above)
//   list_offsets earliest|latest|MS TOPIC:PARTITION...  -> O topic partition offset
//   create TOPIC PARTITIONS RF [KEY=VALUEHEX...] | delete TOPIC | partitions TOPIC TOTAL
//   describe_configs topic|broker NAME -> V key valuehex | alter_config TOPIC KEY=VALUEHEX...
//   delete_records TOPIC:PARTITION:OFFSET... -> O topic partition lowwatermark
//   log_dirs                      -> L broker dir topic partition size
//   reassignments [TOPIC:PARTITION...] -> R topic partition replicas adding removing (comma lists, "-" if empty)
//   reassign TOPIC:PARTITION:BROKER,...|-... -> R topic partition OK|NAME  ("-": cancel)
//   groups -> G group | describe_group GROUP -> S state simple|consumer, then M member instance|- | delete_group G
// R line: "R partition|- timestamp|- key value name=hex,...".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class CompatClient {
    static final long ADMIN_TIMEOUT_S = 30;
    static final PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    final String bootstrap;
    final BufferedReader in;
    Admin admin;
    int nextHandle = 1;
    final Map<Integer, KafkaProducer<byte[], byte[]>> producers = new HashMap<>();
    final Map<Integer, Member> consumers = new HashMap<>();

    CompatClient(String bootstrap, BufferedReader in) {
        this.bootstrap = bootstrap;
        this.in = in;
    }

    public static void main(String[] a) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        CompatClient client = new CompatClient(a[0], in);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            try {
                client.run(line.split(" ", -1));
                out.println("= OK");
            } catch (Exception e) {
                out.println("= " + err(e));
            }
            out.flush();
        }
        client.closeAll();
    }

    // ---- the wire of this harness
    static String hex(byte[] b) {
        if (b == null) return "-";
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    static byte[] unhex(String s) {
        if (s.equals("-")) return null;
        byte[] bytes = new byte[s.length() / 2];
        for (int i = 0; i < bytes.length; i++) bytes[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return bytes;
    }

    static String name(String encoded) {
        return URLDecoder.decode(encoded, StandardCharsets.UTF_8);
    }

    static String enc(String name) {
        return URLEncoder.encode(name, StandardCharsets.UTF_8);
    }

    static TopicPartition tp(String field) {
        String[] f = field.split(":");
        return new TopicPartition(name(f[0]), Integer.parseInt(f[1]));
    }

    static String tpLine(TopicPartition tp) {
        return enc(tp.topic()) + " " + tp.partition();
    }

    static String errorName(Throwable t) {
        while (t.getCause() != null && !(t instanceof ApiException)) t = t.getCause();
        if (t instanceof ApiException) return Errors.forException(t).name();
        return t.getClass().getSimpleName();
    }

    // "ERR NAME message", with the message of the innermost cause when it differs.
    static String err(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null) root = root.getCause();
        String message = String.valueOf(e.getMessage()) + (root == e ? "" : " (" + root.getMessage() + ")");
        return "ERR " + errorName(e) + " " + message.replace('\n', ' ');
    }

    static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
    }

    Properties props() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    Admin admin() {
        if (admin == null) admin = Admin.create(props());
        return admin;
    }

    int handle() {
        return nextHandle++;
    }

    KafkaProducer<byte[], byte[]> producer(String h) {
        KafkaProducer<byte[], byte[]> p = producers.get(Integer.valueOf(h));
        if (p == null) throw new IllegalArgumentException("no producer " + h);
        return p;
    }

    Member member(String h) {
        Member m = consumers.get(Integer.valueOf(h));
        if (m == null) throw new IllegalArgumentException("no consumer " + h);
        return m;
    }

    void run(String[] a) throws Exception {
        switch (a[0]) {
            case "metadata" -> metadata(a);
            case "cluster" -> cluster();
            case "producer" -> producer(a);
            case "txn" -> txn(a);
            case "send" -> send(a);
            case "begin" -> producer(a[1]).beginTransaction();
            case "commit" -> producer(a[1]).commitTransaction();
            case "abort" -> producer(a[1]).abortTransaction();
            case "offsets" -> sendOffsets(a);
            case "consumer" -> consumer(a);
            case "share" -> share(a);
            case "poll" -> member(a[1]).poll(Integer.parseInt(a[2]), Long.parseLong(a[3]));
            case "assignment" -> {
                for (TopicPartition tp : member(a[1]).assignment()) out.println("A " + tpLine(tp));
            }
            case "commit_offsets" -> commitOffsets(a);
            case "committed" -> committed(a);
            case "seek" -> {
                TopicPartition tp = tp(a[2]);
                member(a[1]).seek(tp, Long.parseLong(a[2].substring(a[2].lastIndexOf(':') + 1)));
            }
            case "pause" -> member(a[1]).pause(tps(a, 2));
            case "resume" -> member(a[1]).resume(tps(a, 2));
            case "close" -> close(a[1]);
            case "list_offsets" -> listOffsets(a);
            case "create" -> create(a);
            case "delete" -> get(admin().deleteTopics(List.of(name(a[1]))).all());
            case "partitions" -> get(admin().createPartitions(
                Map.of(name(a[1]), NewPartitions.increaseTo(Integer.parseInt(a[2])))).all());
            case "describe_configs" -> describeConfigs(a);
            case "alter_config" -> alterConfig(a);
            case "delete_records" -> deleteRecords(a);
            case "log_dirs" -> logDirs();
            case "reassignments" -> reassignments(a);
            case "reassign" -> reassign(a);
            case "groups" -> {
                for (ConsumerGroupListing g : get(admin().listConsumerGroups().all()))
                    out.println("G " + enc(g.groupId()));
            }
            case "describe_group" -> describeGroup(name(a[1]));
            case "delete_group" -> get(admin().deleteConsumerGroups(List.of(name(a[1]))).all());
            default -> throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    static List<TopicPartition> tps(String[] a, int from) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = from; i < a.length; i++) tps.add(tp(a[i]));
        return tps;
    }

    // ---- metadata and admin
    void nodes(DescribeClusterResult c) throws Exception {
        for (Node n : get(c.nodes())) out.println("B " + n.id() + " " + n.host() + " " + n.port());
        Node controller = get(c.controller());
        out.println("C " + (controller == null ? -1 : controller.id()));
    }

    void cluster() throws Exception {
        DescribeClusterResult c = admin().describeCluster();
        out.println("I " + get(c.clusterId()));
        nodes(c);
    }

    void metadata(String[] a) throws Exception {
        nodes(admin().describeCluster());
        Collection<String> names = new ArrayList<>();
        for (int i = 1; i < a.length; i++) names.add(name(a[i]));
        if (names.isEmpty()) names = get(admin().listTopics().names());
        if (names.isEmpty()) return;
        for (var e : admin().describeTopics(names).topicNameValues().entrySet()) {
            TopicDescription d;
            try {
                d = e.getValue().get(ADMIN_TIMEOUT_S, TimeUnit.SECONDS);
            } catch (ExecutionException x) {
                if (!(x.getCause() instanceof ApiException)) throw x;
                out.println("E " + enc(e.getKey()) + " " + Errors.forException(x.getCause()).code());
                continue;
            }
            for (TopicPartitionInfo p : d.partitions())
                out.println("T " + enc(e.getKey()) + " " + p.partition() + " " + (p.leader() == null ? -1 : p.leader().id()));
        }
    }

    void create(String[] a) throws Exception {
        NewTopic topic = new NewTopic(name(a[1]), Integer.parseInt(a[2]), Short.parseShort(a[3]));
        Map<String, String> configs = new HashMap<>();
        for (int i = 4; i < a.length; i++) {
            String[] kv = a[i].split("=", 2);
            configs.put(kv[0], new String(unhex(kv[1]), StandardCharsets.UTF_8));
        }
        get(admin().createTopics(List.of(topic.configs(configs))).all());
    }

    static ConfigResource resource(String type, String name) {
        return new ConfigResource(type.equals("broker") ? ConfigResource.Type.BROKER : ConfigResource.Type.TOPIC, name);
    }

    void describeConfigs(String[] a) throws Exception {
        ConfigResource r = resource(a[1], name(a[2]));
        for (ConfigEntry e : get(admin().describeConfigs(List.of(r)).all()).get(r).entries())
            if (e.value() != null) out.println("V " + e.name() + " " + hex(e.value().getBytes(StandardCharsets.UTF_8)));
    }

    void alterConfig(String[] a) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (int i = 2; i < a.length; i++) {
            String[] kv = a[i].split("=", 2);
            ops.add(new AlterConfigOp(new ConfigEntry(kv[0], new String(unhex(kv[1]), StandardCharsets.UTF_8)),
                AlterConfigOp.OpType.SET));
        }
        get(admin().incrementalAlterConfigs(Map.of(resource("topic", name(a[1])), ops)).all());
    }

    void listOffsets(String[] a) throws Exception {
        OffsetSpec spec = switch (a[1]) {
            case "earliest" -> OffsetSpec.earliest();
            case "latest" -> OffsetSpec.latest();
            default -> OffsetSpec.forTimestamp(Long.parseLong(a[1]));
        };
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (TopicPartition tp : tps(a, 2)) req.put(tp, spec);
        for (var e : get(admin().listOffsets(req).all()).entrySet())
            out.println("O " + tpLine(e.getKey()) + " " + e.getValue().offset());
    }

    void deleteRecords(String[] a) throws Exception {
        Map<TopicPartition, RecordsToDelete> req = new HashMap<>();
        for (int i = 1; i < a.length; i++)
            req.put(tp(a[i]), RecordsToDelete.beforeOffset(Long.parseLong(a[i].substring(a[i].lastIndexOf(':') + 1))));
        for (var e : admin().deleteRecords(req).lowWatermarks().entrySet())
            out.println("O " + tpLine(e.getKey()) + " " + get(e.getValue()).lowWatermark());
    }

    void logDirs() throws Exception {
        List<Integer> brokers = new ArrayList<>();
        for (Node n : get(admin().describeCluster().nodes())) brokers.add(n.id());
        for (var broker : get(admin().describeLogDirs(brokers).allDescriptions()).entrySet())
            for (var dir : broker.getValue().entrySet())
                for (var replica : dir.getValue().replicaInfos().entrySet())
                    out.println("L " + broker.getKey() + " " + enc(dir.getKey()) + " " + tpLine(replica.getKey())
                        + " " + replica.getValue().size());
    }

    static String ids(List<Integer> ids) {
        if (ids.isEmpty()) return "-";
        StringBuilder s = new StringBuilder();
        for (Integer id : ids) s.append(s.length() == 0 ? "" : ",").append(id);
        return s.toString();
    }

    void reassignments(String[] a) throws Exception {
        ListPartitionReassignmentsResult r = a.length > 1
            ? admin().listPartitionReassignments(new HashSet<>(tps(a, 1))) : admin().listPartitionReassignments();
        for (var e : get(r.reassignments()).entrySet()) {
            PartitionReassignment p = e.getValue();
            out.println("R " + tpLine(e.getKey()) + " " + ids(p.replicas()) + " " + ids(p.addingReplicas()) + " "
                + ids(p.removingReplicas()));
        }
    }

    void reassign(String[] a) throws Exception {
        Map<TopicPartition, Optional<NewPartitionReassignment>> req = new LinkedHashMap<>();
        for (int i = 1; i < a.length; i++) {
            String target = a[i].substring(a[i].lastIndexOf(':') + 1);
            List<Integer> replicas = new ArrayList<>();
            if (!target.equals("-")) for (String id : target.split(",")) replicas.add(Integer.valueOf(id));
            req.put(tp(a[i]), replicas.isEmpty() ? Optional.empty() : Optional.of(new NewPartitionReassignment(replicas)));
        }
        for (var e : admin().alterPartitionReassignments(req).values().entrySet()) {
            String verdict = "OK";
            try {
                get(e.getValue());
            } catch (ExecutionException x) {
                verdict = errorName(x);
            }
            out.println("R " + tpLine(e.getKey()) + " " + verdict);
        }
    }

    void describeGroup(String group) throws Exception {
        ConsumerGroupDescription d = get(admin().describeConsumerGroups(List.of(group)).all()).get(group);
        out.println("S " + d.state() + " " + (d.isSimpleConsumerGroup() ? "simple" : "consumer"));
        for (MemberDescription m : d.members())
            out.println("M " + enc(m.consumerId()) + " " + m.groupInstanceId().map(CompatClient::enc).orElse("-"));
    }

    // ---- producers
    void producer(String[] a) {
        Properties p = props();
        p.put("acks", a[1].equals("-1") ? "all" : a[1]);
        p.put("compression.type", a[2]);
        p.put("enable.idempotence", a[3]);
        p.put("max.request.size", a[4]);
        timeouts(p, a[5]);
        opened(new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer()));
    }

    // Delivery bounded by the harness's timeout (the client refuses a delivery timeout below linger + request timeout).
    static void timeouts(Properties p, String timeoutMs) {
        p.put("linger.ms", "5");
        p.put("delivery.timeout.ms", timeoutMs);
        p.put("request.timeout.ms", String.valueOf(Long.parseLong(timeoutMs) - 5));
        p.put("max.block.ms", timeoutMs);
    }

    void opened(KafkaProducer<byte[], byte[]> producer) {
        int h = handle();
        producers.put(h, producer);
        out.println("H " + h);
    }

    void txn(String[] a) {
        Properties p = props();
        p.put("transactional.id", name(a[1]));
        timeouts(p, a[2]);
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        try {
            producer.initTransactions();
        } catch (RuntimeException e) {
            producer.close(Duration.ZERO);
            throw e;
        }
        opened(producer);
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
                headers.add(new RecordHeader(name(kv[0]), unhex(kv[1])));
            }
        return new ProducerRecord<>(topic, partition, ts, unhex(f[3]), unhex(f[4]), headers);
    }

    // Sends N records (the next N lines), flushes, and answers one line per record in order.
    @SuppressWarnings("unchecked")
    void send(String[] a) throws Exception {
        KafkaProducer<byte[], byte[]> producer = producer(a[1]);
        String topic = name(a[2]);
        int n = Integer.parseInt(a[3]);
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < n; i++) lines.add(in.readLine());
        List<Object> sent = new ArrayList<>();  // a Future per record, or what send() threw for it
        for (String line : lines) {
            try {
                sent.add(producer.send(record(topic, line)));
            } catch (Exception e) {  // refused before sending (a fenced or failed transactional producer)
                sent.add(e);
            }
        }
        producer.flush();
        for (Object result : sent) {
            try {
                if (result instanceof Exception e) throw e;
                RecordMetadata md = ((Future<RecordMetadata>) result).get();
                out.println("D " + md.partition() + " " + (md.hasOffset() ? md.offset() : -1));
            } catch (Exception e) {
                out.println("F " + err(e).substring(4));
            }
        }
    }

    void commitOffsets(String[] a) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (int i = 2; i < a.length; i++) {
            String[] f = a[i].split(":", -1);
            offsets.put(new TopicPartition(name(f[0]), Integer.parseInt(f[1])),
                new OffsetAndMetadata(Long.parseLong(f[2]), new String(unhex(f[3]), StandardCharsets.UTF_8)));
        }
        member(a[1]).consumer.commitSync(offsets);
    }

    void sendOffsets(String[] a) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (int i = 3; i < a.length; i++)
            offsets.put(tp(a[i]), new OffsetAndMetadata(Long.parseLong(a[i].substring(a[i].lastIndexOf(':') + 1))));
        // The group member's metadata (group, generation and member id: KIP-447 fencing), as an application sends.
        producer(a[1]).sendOffsetsToTransaction(offsets, member(a[2]).consumer.groupMetadata());
    }

    // ---- consumers
    void consumer(String[] a) {
        Properties p = props();
        if (!a[1].equals("-")) p.put("group.id", name(a[1]));
        if (!a[2].equals("-")) p.put("group.instance.id", name(a[2]));
        p.put("auto.offset.reset", a[3]);
        p.put("allow.auto.create.topics", a[4]);
        if (!a[5].equals("-")) p.put("isolation.level", a[5]);
        p.put("enable.auto.commit", "false");
        if (a[6].equals("classic")) {
            p.put("session.timeout.ms", a[2].equals("-") ? "10000" : "45000");
            p.put("heartbeat.interval.ms", "500");
        } else {
            p.put("group.protocol", a[6]);  // KIP-848: the broker owns session and heartbeat timing
        }
        Member m = new Member(new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
        int h = handle();
        consumers.put(h, m);
        if (!a[7].equals("-")) {
            List<String> topics = new ArrayList<>();
            for (String t : a[7].split(",")) topics.add(name(t));
            m.consumer.subscribe(topics, m);
        }
        if (!a[8].equals("-")) m.consumer.assign(tps(a[8].split(","), 0));
        out.println("H " + h);
    }

    @SuppressWarnings("unchecked")
    void share(String[] a) throws Exception {
        Properties p = props();
        p.put("group.id", name(a[1]));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        Class<?> cls;
        try {
            cls = Class.forName("org.apache.kafka.clients.consumer.KafkaShareConsumer");
        } catch (ClassNotFoundException e) {
            throw new UnsupportedOperationException("this kafka-clients has no KafkaShareConsumer (Kafka 4.0+)");
        }
        Object share = cls.getConstructor(Properties.class).newInstance(p);
        List<String> topics = new ArrayList<>();
        for (String t : a[2].split(",")) topics.add(name(t));
        cls.getMethod("subscribe", Collection.class).invoke(share, topics);
        ShareMember m = new ShareMember(share, cls);
        int h = handle();
        consumers.put(h, m);
        out.println("H " + h);
    }

    void committed(String[] a) {
        Map<TopicPartition, OffsetAndMetadata> got = member(a[1]).consumer.committed(new HashSet<>(tps(a, 2)),
            Duration.ofSeconds(ADMIN_TIMEOUT_S));
        for (TopicPartition tp : tps(a, 2)) {
            OffsetAndMetadata o = got.get(tp);
            out.println("K " + tpLine(tp) + " " + (o == null ? "- -"
                : o.offset() + " " + hex(o.metadata() == null ? null : o.metadata().getBytes(StandardCharsets.UTF_8))));
        }
    }

    void close(String h) {
        KafkaProducer<byte[], byte[]> p = producers.remove(Integer.valueOf(h));
        if (p != null) p.close(Duration.ofSeconds(ADMIN_TIMEOUT_S));
        Member m = consumers.remove(Integer.valueOf(h));
        if (m != null) m.close();
    }

    void closeAll() {
        for (Integer h : new ArrayList<>(producers.keySet())) close(h.toString());
        for (Integer h : new ArrayList<>(consumers.keySet())) close(h.toString());
        if (admin != null) admin.close(Duration.ofSeconds(5));
    }

    static void print(ConsumerRecord<byte[], byte[]> r) {
        StringBuilder hs = new StringBuilder();
        for (Header h : r.headers()) {
            if (hs.length() > 0) hs.append(',');
            hs.append(enc(h.key())).append('=').append(h.value() == null ? "" : hex(h.value()));
        }
        out.println("M " + enc(r.topic()) + " " + r.partition() + " " + r.offset() + " " + r.timestamp() + " "
            + hex(r.key()) + " " + hex(r.value()) + " " + hs);
    }

    // A consumer and the records its polls returned beyond what the harness asked for (handed out by later polls).
    // Records of partitions it stops owning, pauses or seeks are dropped from that buffer, as the client drops its own.
    static class Member implements ConsumerRebalanceListener {
        final Consumer<byte[], byte[]> consumer;
        final ArrayDeque<ConsumerRecord<byte[], byte[]>> buffer = new ArrayDeque<>();

        Member(Consumer<byte[], byte[]> consumer) {
            this.consumer = consumer;
        }

        ConsumerRecords<byte[], byte[]> fetch(Duration timeout) {
            return consumer.poll(timeout);
        }

        // At least one poll of the client (a group member rejoins in poll), then up to MAX records.
        void poll(int max, long timeoutMs) {
            long deadline = System.currentTimeMillis() + timeoutMs;
            do {
                long left = buffer.isEmpty() ? Math.max(0, deadline - System.currentTimeMillis()) : 0;
                for (ConsumerRecord<byte[], byte[]> r : fetch(Duration.ofMillis(left))) buffer.add(r);
            } while (buffer.isEmpty() && System.currentTimeMillis() < deadline);
            for (int i = 0; i < max && !buffer.isEmpty(); i++) print(buffer.poll());
        }

        Set<TopicPartition> assignment() {
            return consumer.assignment();
        }

        // Drops the buffered records of these partitions; returns the first dropped offset of each.
        Map<TopicPartition, Long> drop(Collection<TopicPartition> tps) {
            Map<TopicPartition, Long> first = new HashMap<>();
            buffer.removeIf(r -> {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                if (!tps.contains(tp)) return false;
                first.putIfAbsent(tp, r.offset());
                return true;
            });
            return first;
        }

        void seek(TopicPartition tp, long offset) {
            drop(List.of(tp));
            consumer.seek(tp, offset);
        }

        void pause(Collection<TopicPartition> tps) {
            for (var e : drop(tps).entrySet()) consumer.seek(e.getKey(), e.getValue());
            consumer.pause(tps);
        }

        void resume(Collection<TopicPartition> tps) {
            consumer.resume(tps);
        }

        void close() {
            consumer.close(Duration.ofSeconds(ADMIN_TIMEOUT_S));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            drop(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            drop(partitions);
        }
    }

    // A KafkaShareConsumer (Kafka 4.0+, KIP-932) behind the same poll; records are acknowledged implicitly by the
    // next poll, the client's default.
    static class ShareMember extends Member {
        final Object share;
        final Class<?> cls;

        ShareMember(Object share, Class<?> cls) {
            super(null);
            this.share = share;
            this.cls = cls;
        }

        @Override
        @SuppressWarnings("unchecked")
        ConsumerRecords<byte[], byte[]> fetch(Duration timeout) {
            try {
                return (ConsumerRecords<byte[], byte[]>) cls.getMethod("poll", Duration.class).invoke(share, timeout);
            } catch (java.lang.reflect.InvocationTargetException e) {
                throw e.getCause() instanceof RuntimeException r ? r : new RuntimeException(e.getCause());
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        }

        @Override
        void close() {
            try {
                cls.getMethod("close", Duration.class).invoke(share, Duration.ofSeconds(ADMIN_TIMEOUT_S));
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        }
    }
}
