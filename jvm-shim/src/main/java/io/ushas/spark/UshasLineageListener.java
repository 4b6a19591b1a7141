package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart;
import org.apache.spark.sql.util.QueryExecutionListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import scala.Option;
import scala.Tuple2;

/**
 * Automatic lineage capture ({@code spark.sql.queryExecutionListeners=io.ushas.spark.UshasLineageListener}).
 *
 * <p>Thin by design: on Spark's listener thread it only serializes the analyzed plan of each execution
 * (PlanWriter; large plans go to a private temp file, never through a Py4J argument) with its root execution
 * id; the message is offered to a bounded queue, and one worker thread hands it to Python
 * ({@code lineage.event} over the bridge). Python decides what the executions are: it groups those of one
 * user action into one run ({@code lineage.actions}: a CTAS or a V1 INSERT is reported as several
 * executions) and stores it asynchronously. The query never waits and never fails because of lineage: a
 * full queue or an unreachable bridge drops the action, counted, logged, and the count travels to Python
 * with the next message (or at application end).
 *
 * <p>What stays here because it needs the JVM: the plan walk (the analyzed plan exists only on Spark's
 * thread, during the callback); the pairing of Spark's two callbacks of one execution; the bounded queue and
 * its worker (Spark's listener thread must never wait on Py4J: measured 40-150 us per call, 2-4 ms on a new
 * thread, unbounded when the bridge is down); retrying delivery for {@code .retryTimeout} (what is retried
 * is reaching Python, which cannot decide it); counting the actions the JVM drops (Python never sees them);
 * choosing the catalog whose bridge options reach Python ({@link #target()}: the options are needed before
 * Python can be called).
 *
 * <p>{@link #flush(long)} / {@link #flushAll(long)} wait until every action Spark has reported so far is
 * stored (or counted as dropped): Spark's listener bus drained, this queue handed over, Python's queue
 * stored. At application end the same happens (bounded by {@code .shutdownTimeout}) before the bridge
 * process is stopped, so a config-only application loses no run that was already reported.
 *
 * <p>It is also a {@link SparkListener} on the same (shared) listener queue: the execution-start event
 * gives the root execution id and the start time; the execution-end event, delivered right after the
 * {@link QueryExecutionListener} callback for the same execution, gives its id.
 *
 * <p>Options ({@code SparkConf}): {@code spark.ushas.lineage.catalog} (the Ushas catalog whose store and
 * project receive the lineage; default: the first configured by name), {@code .queueSize} (1000),
 * {@code .inlinePlanChars} (3000), {@code .retryTimeout} (seconds the worker retries an unreachable
 * bridge, 30), {@code .shutdownTimeout} (seconds to drain at application end, 10); {@code .openlineage.url}
 * (+ {@code .apiKey}, {@code .timeout} seconds, {@code .endpoint}): Python also sends every run as OpenLineage
 * events over HTTP (this class only passes the options on, and the write metrics of each execution).
 */
public final class UshasLineageListener extends SparkListener implements QueryExecutionListener {
    private static final Logger LOG = LoggerFactory.getLogger(UshasLineageListener.class);
    private static final String PREFIX = "spark.ushas.lineage.";
    /** OpenLineage HTTP transport options, handed to Python with every action (Python sends the events). */
    private static final String OPENLINEAGE = PREFIX + "openlineage.";
    private static final int MAX_ERROR_CHARS = 4000;
    /** Live listeners of this JVM (for {@link #flushAll}). */
    private static final CopyOnWriteArrayList<UshasLineageListener> INSTANCES = new CopyOnWriteArrayList<>();

    private final SparkConf conf;
    private final ArrayBlockingQueue<ObjectNode> queue;
    private final int inlineLimit;
    private final long retryNanos;
    private final long shutdownMillis;
    private final AtomicLong dropped = new AtomicLong();
    /** Python's drop count (its capture's, JVM drops included) as of its last answer. */
    private final AtomicLong pythonDropped = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong offered = new AtomicLong();   // actions put on the queue
    private final AtomicLong finished = new AtomicLong();  // of those: handed over or dropped by the worker
    private final Thread worker;
    private volatile boolean stopping;
    private final SparkContext sc;
    /** {@code spark.ushas.lineage.openlineage.*} for Python, or null when no URL is configured. */
    private final ObjectNode openLineage;

    // listener-thread state (Spark delivers one queue's events on one thread)
    private final Map<Long, long[]> starts = new HashMap<>();  // executionId -> {root, start ms}
    private final java.util.ArrayDeque<End> parkedEnds = new java.util.ArrayDeque<>();
    /** Root ids of actions one of whose executions was dropped here: the action is dropped as a whole
     * (counted once, when its root ends); bounded like Python's open actions. */
    private final java.util.LinkedHashSet<Long> lostRoots = new java.util.LinkedHashSet<>();
    /** The same for executions the worker could not hand over (worker thread only). */
    private final java.util.LinkedHashSet<Long> lostByWorker = new java.util.LinkedHashSet<>();
    private QueryExecution lastQe;
    private String lastFunc;
    private Exception lastError;

    private Target target;  // resolved at the first event
    /** The Connect / Thrift server client of each execution (listener thread). */
    private final ClientSessions clients = new ClientSessions();

    private record End(long id, long root, long startMs, long endMs, QueryExecution qe) {}

    /** Where lineage goes: the store of one Ushas catalog, and how to reach Python. */
    private record Target(ObjectNode ctx, ObjectNode catalogs, Bridge.BridgeOptions options) {}

    public UshasLineageListener(SparkConf conf) {
        this.conf = conf;
        this.queue = new ArrayBlockingQueue<>(Math.max(1, conf.getInt(PREFIX + "queueSize", 1000)));
        this.inlineLimit = conf.getInt(PREFIX + "inlinePlanChars", 3000);
        this.retryNanos = TimeUnit.SECONDS.toNanos(conf.getLong(PREFIX + "retryTimeout", 30));
        this.shutdownMillis = TimeUnit.SECONDS.toMillis(conf.getLong(PREFIX + "shutdownTimeout", 10));
        this.openLineage = openLineageOptions(conf);
        this.worker = new Thread(this::drain, "ushas-lineage-listener");
        this.worker.setDaemon(true);
        this.worker.start();
        this.sc = SparkContext.getOrCreate();  // the listener is created by a session: its context exists
        sc.addSparkListener(this);
        INSTANCES.add(this);
    }

    private static ObjectNode openLineageOptions(SparkConf conf) {
        String url = conf.get(OPENLINEAGE + "url", null);
        if (url == null || url.isBlank()) return null;
        ObjectNode o = Json.object();
        o.put("url", url.trim());
        String key = conf.get(OPENLINEAGE + "apiKey", null);
        if (key != null && !key.isBlank()) o.put("api_key", key.trim());
        o.put("timeout", conf.get(OPENLINEAGE + "timeout", "5"));
        o.put("endpoint", conf.get(OPENLINEAGE + "endpoint", "/api/v1/lineage"));
        return o;
    }

    public UshasLineageListener() {
        this(SparkContext.getOrCreate().getConf());
    }

    // ---- QueryExecutionListener (listener thread) ----------------------------------------------
    // For one execution Spark delivers, on this one thread and back to back, the QueryExecutionListener
    // callback and the SparkListenerSQLExecutionEnd event; their order depends on the order the two
    // listeners joined the shared queue, so whichever comes first waits for the other.
    @Override
    public void onSuccess(String funcName, QueryExecution qe, long durationNs) {
        callback(funcName, qe, null);
    }

    /** A query that failed on its own: its failure is Spark's to report, so nothing here logs above DEBUG,
     * and its analyzed plan is captured only if analysis had finished (never analyzed again). */
    @Override
    public void onFailure(String funcName, QueryExecution qe, Exception exception) {
        callback(funcName, qe, exception);
    }

    /** Whether {@code qe}'s analysis completed: Spark's tracker records the phase only on success, so a
     * failed analysis (or one never run) is not re-run by asking for the plan. */
    private static boolean analyzed(QueryExecution qe) {
        try {
            return qe.tracker().phases().contains(org.apache.spark.sql.catalyst.QueryPlanningTracker.ANALYSIS());
        } catch (Throwable t) {
            return false;
        }
    }

    private void callback(String funcName, QueryExecution qe, Exception error) {
        try {
            for (var it = parkedEnds.iterator(); it.hasNext(); ) {
                End end = it.next();
                if (end.qe == qe) {
                    it.remove();
                    complete(end, funcName, qe, error);
                    return;
                }
            }
            lastQe = qe;
            lastFunc = funcName;
            lastError = error;
        } catch (Throwable t) {
            if (error != null) {
                LOG.debug("Ushas lineage: capture failed for a failed execution", t);
            } else {
                LOG.warn("Ushas lineage: capture failed for an execution: {}", t.toString());
            }
        }
    }

    // ---- SparkListener (same thread) ---------------------------------------------------------------
    @Override
    public void onOtherEvent(SparkListenerEvent event) {
        try {
            clients.observe(event);
            if (event instanceof SparkListenerSQLExecutionStart s) {
                long root = s.rootExecutionId().isDefined() ? ((Number) s.rootExecutionId().get()).longValue()
                        : s.executionId();
                starts.put(s.executionId(), new long[] {root, s.time()});
            } else if (event instanceof SparkListenerSQLExecutionEnd e) {
                long id = e.executionId();
                long[] start = starts.remove(id);
                End end = new End(id, start != null ? start[0] : id, start != null ? start[1] : e.time(),
                        e.time(), e.qe());
                if (lastQe != null && e.qe() == lastQe) {
                    QueryExecution qe = lastQe;
                    lastQe = null;
                    complete(end, lastFunc, qe, lastError);
                } else if (MicroBatches.isMicroBatch(e.qe()) && listensTo(e.qe())) {
                    // a streaming micro-batch: Spark calls no QueryExecutionListener for it; its end is the run
                    complete(end, "microBatch", e.qe(), e.executionFailure().isDefined()
                            ? new RuntimeException(e.executionFailure().get().toString()) : null);
                } else if (e.qe() != null) {
                    parkedEnds.addLast(end);  // its callback comes next (or it is another session's)
                    while (parkedEnds.size() > 64) parkedEnds.removeFirst();
                }
            }
        } catch (Throwable t) {  // lineage never disturbs the application
            LOG.warn("Ushas lineage: capture failed for an event: {}", t.toString());
        }
    }

    /** Whether this listener is one of the session's that ran {@code qe}: every session has its own listener
     *  on the context's shared bus, so a micro-batch (which no QueryExecutionListener hears) is completed by
     *  its own session's listener only, not once more by every other session's (a lone copy of the
     *  micro-batch would be stored as a run of its own). True when the session cannot be asked. */
    private boolean listensTo(QueryExecution qe) {
        try {
            for (var l : qe.sparkSession().listenerManager().listListeners()) {
                if (l == this) return true;
            }
            return false;
        } catch (Throwable t) {
            return true;
        }
    }

    /** One execution, adapted to JSON (plan, root id, times, SQL text, error) and handed to the queue. */
    private void complete(End end, String func, QueryExecution qe, Exception error) {
        ObjectNode x = execution(end.id, func, qe, error != null);
        x.put("root_id", end.root);
        x.put("start_ms", end.startMs);
        x.put("end_ms", end.endMs);
        x.put("failed", error != null);
        if (error != null) x.put("error", errorText(error));
        String sql = sqlText(qe);
        if (sql != null) x.put("sql", sql);
        if (error == null && ClientSessions.isCommandResult(qe)) x.put("command_result", true);
        ObjectNode stream = MicroBatches.ids(qe);
        if (stream != null) x.set("stream", stream);
        ship(end.id, end.root, x, clients.of(end.id, end.root), qe);
    }

    private ObjectNode execution(long id, String func, QueryExecution qe, boolean failed) {
        ObjectNode x = Json.object();
        x.put("execution_id", id);
        x.put("func", func);
        long t0 = System.nanoTime();
        if (failed && !analyzed(qe)) {
            x.put("error", "plan not serialized: the query failed before its analysis completed");
            x.put("walk_ms", 0.0);
            return x;
        }
        try {
            String plan = PlanWriter.export(qe.analyzed(), inlineLimit);
            if (plan.startsWith("{")) {
                x.put("plan", plan);
                x.put("plan_chars", plan.length());
            } else {
                x.put("plan_file", plan);
                x.put("plan_chars", new File(plan).length());
            }
        } catch (Throwable t) {
            x.put("error", "plan not serialized: " + t);
        }
        x.put("walk_ms", (System.nanoTime() - t0) / 1e6);
        if (openLineage != null && !failed) {
            ObjectNode m = writeMetrics(qe);
            if (m != null) x.set("write_metrics", m);
        }
        return x;
    }

    /** Rows, bytes and files a write committed (an Ushas table's: what its commit registered; else Spark's
     * write metrics numOutputRows, numOutputBytes, numFiles of the data-writing node), or null: for
     * OpenLineage's outputStatistics facet. */
    private static ObjectNode writeMetrics(QueryExecution qe) {
        try {
            java.util.ArrayDeque<org.apache.spark.sql.execution.SparkPlan> todo = new java.util.ArrayDeque<>();
            todo.add(qe.executedPlan());
            for (int seen = 0; !todo.isEmpty() && seen < 32; seen++) {
                org.apache.spark.sql.execution.SparkPlan p = todo.poll();
                if (p instanceof org.apache.spark.sql.execution.CommandResultExec c) {
                    todo.add(c.commandPhysicalPlan());
                    continue;
                }
                if (p instanceof org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec a) {
                    todo.add(a.executedPlan());
                    continue;
                }
                if (p instanceof org.apache.spark.sql.execution.datasources.v2.V2ExistingTableWriteExec w
                        && w.write() instanceof UshasWrite u && u.committed() != null) {
                    long[] c = u.committed();  // what the catalog's commit registered
                    return Json.object().put("rows", c[0]).put("bytes", c[1]).put("files", c[2]);
                }
                var metrics = p.metrics();
                if (metrics.contains("numFiles") || metrics.contains("numOutputBytes")) {
                    ObjectNode m = Json.object();
                    for (String[] k : new String[][] {{"numOutputRows", "rows"}, {"numOutputBytes", "bytes"},
                            {"numFiles", "files"}}) {
                        var v = metrics.get(k[0]);
                        if (v.isDefined()) m.put(k[1], v.get().value());
                    }
                    return m;
                }
                if (p.children().size() == 1) todo.add(p.children().head());
            }
        } catch (Throwable t) {
            LOG.debug("Ushas lineage: no write metrics: {}", t.toString());
        }
        return null;
    }

    /** The SQL text of the statement: the plan's origin, else that of a node under it (a CTAS or a CREATE
     * TABLE command carries none itself; every node's origin holds the whole statement). */
    private static String sqlText(QueryExecution qe) {
        try {
            java.util.ArrayDeque<Object> todo = new java.util.ArrayDeque<>();
            todo.add(qe.logical());
            for (int seen = 0; !todo.isEmpty() && seen < 16; seen++) {
                if (!(todo.poll() instanceof org.apache.spark.sql.catalyst.trees.TreeNode<?> node)) continue;
                Option<String> text = node.origin().sqlText();
                if (text.isDefined()) return text.get();
                node.children().foreach(c -> todo.add(c));
                node.innerChildren().foreach(c -> todo.add(c));
            }
        } catch (Throwable t) {
            return null;
        }
        return null;
    }

    private static String errorText(Throwable t) {
        String s = String.valueOf(t.getMessage() != null ? t.getMessage() : t.toString());
        return s.length() > MAX_ERROR_CHARS ? s.substring(0, MAX_ERROR_CHARS) : s;
    }

    private void ship(long id, long root, ObjectNode execution, ClientSessions.Client client, QueryExecution qe) {
        Target t = target();
        if (t == null) {
            discardPlan(execution);
            return;
        }
        boolean isRoot = id == root;
        ObjectNode action = Json.object();
        action.put("application_id", sc.applicationId());
        action.put("application_name", sc.appName());
        action.put("user", sc.sparkUser());
        ClientSessions.describe(action, client, qe);
        Identity.configured(action, t.ctx());  // the catalog's configured .user wins (docs/governance.md)
        action.set("catalogs", t.catalogs());
        ObjectNode msg = Json.object();
        msg.set("ctx", t.ctx());
        msg.set("store", t.ctx());
        msg.set("action", action);
        msg.set("execution", execution);
        if (openLineage != null) msg.set("openlineage", openLineage);
        if (isRoot && lostRoots.remove(root)) {  // an execution of it was dropped: the action goes as a whole
            msg.put("discard", true);
            discardPlan(execution);
            execution.remove("plan_file");
            long n = dropped.incrementAndGet();
            LOG.warn("Ushas lineage: queue full, dropped execution {}; {} dropped in all", root, n);
        }
        offered.incrementAndGet();
        if (!queue.offer(msg)) {
            offered.decrementAndGet();
            discardPlan(execution);
            if (msg.has("discard")) return;  // counted above
            if (isRoot) {
                long n = dropped.incrementAndGet();
                LOG.warn("Ushas lineage: queue full ({} actions), dropped execution {}; {} dropped in all",
                        queue.size(), root, n);
            } else {
                lostRoots.add(root);
                while (lostRoots.size() > 1000) lostRoots.remove(lostRoots.iterator().next());
            }
        }
    }

    private static void discardPlan(JsonNode execution) {
        if (execution != null && execution.hasNonNull("plan_file")) {
            new File(execution.get("plan_file").asText()).delete();
        }
    }

    /** The catalog whose store receives lineage: spark.ushas.lineage.catalog, else the first by name. */
    private Target target() {
        if (target != null) return target;
        SparkConf c = sc.getConf();
        TreeMap<String, String> ushas = new TreeMap<>();
        Map<String, String> all = new HashMap<>();
        for (Tuple2<String, String> kv : c.getAll()) {
            all.put(kv._1(), kv._2());
        }
        for (Map.Entry<String, String> kv : all.entrySet()) {
            String k = kv.getKey();
            if (k.startsWith("spark.sql.catalog.") && k.indexOf('.', "spark.sql.catalog.".length()) < 0
                    && UshasCatalog.class.getName().equals(kv.getValue())) {
                ushas.put(k.substring("spark.sql.catalog.".length()), k);
            }
        }
        if (ushas.isEmpty()) {
            LOG.warn("Ushas lineage: no spark.sql.catalog.<name>={} configured: lineage has no store",
                    UshasCatalog.class.getName());
            return null;
        }
        String name = all.getOrDefault(PREFIX + "catalog", ushas.firstKey());
        String prefix = "spark.sql.catalog." + name;
        String uri = all.get(prefix + ".uri");
        if (uri == null) {
            LOG.warn("Ushas lineage: {}.uri is not set: lineage has no store", prefix);
            return null;
        }
        String project = all.getOrDefault(prefix + ".project", "default");
        ObjectNode ctx = Json.object();
        ctx.put("uri", uri);
        ctx.put("project", project);
        if (all.containsKey(prefix + ".create")) ctx.put("create", Boolean.parseBoolean(all.get(prefix + ".create")));
        String user = all.get(prefix + ".user");
        if (user != null && !user.isBlank()) ctx.put(Identity.USER, user);
        ctx.put("spark_catalog", name);
        RemoteOptions.describe(ctx, k -> all.get(prefix + "." + k));  // remote mode: the service's token
        ObjectNode catalogs = Json.object();
        for (String n : ushas.keySet()) {
            String p = "spark.sql.catalog." + n;
            if (uri.equals(all.get(p + ".uri")) && project.equals(all.getOrDefault(p + ".project", "default"))) {
                catalogs.put(n, all.getOrDefault(p + ".catalog", n));
            }
        }
        target = new Target(ctx, catalogs, Bridge.BridgeOptions.of(name, k -> all.get(prefix + "." + k), all::get));
        return target;
    }

    // ---- the worker -----------------------------------------------------------------------------------
    private void drain() {
        while (true) {
            ObjectNode msg;
            try {
                msg = queue.poll(200, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (msg == null) {
                if (stopping) return;
                continue;
            }
            try {
                deliver(msg);
            } finally {
                finished.incrementAndGet();
            }
        }
    }

    private void deliver(ObjectNode msg) {
        JsonNode x = msg.get("execution");
        long root = x.path("root_id").asLong();
        if (x.path("execution_id").asLong() == root && lostByWorker.remove(root) && !msg.has("discard")) {
            msg.put("discard", true);  // counted when its lost execution was: Python lets the action go
            discardPlan(x);
            ((ObjectNode) x).remove("plan_file");
        }
        long deadline = System.nanoTime() + (stopping ? Math.min(retryNanos, TimeUnit.SECONDS.toNanos(2)) : retryNanos);
        long delayMs = 50;
        Throwable last = null;
        while (System.nanoTime() < deadline) {
            try {
                msg.put("jvm_dropped", dropped.get());
                JsonNode answer = Bridge.call("lineage.event", msg, target.options());
                if (answer.has("error")) {  // Python refused it (a bug, not an outage): retrying won't help
                    discardPlan(msg.get("execution"));
                    lost(msg);
                    LOG.warn("Ushas lineage: Python refused execution {}: {}; {} dropped in all",
                            msg.get("execution").get("execution_id"), answer.get("error"), dropped.get());
                    return;
                }
                sent.incrementAndGet();
                pythonDropped.accumulateAndGet(answer.path("dropped").asLong(0), Math::max);
                return;
            } catch (Throwable t) {
                last = t;
                try {
                    Thread.sleep(delayMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
                delayMs = Math.min(delayMs * 2, 2000);
            }
        }
        discardPlan(msg.get("execution"));
        lost(msg);
        LOG.warn("Ushas lineage: Python did not take execution {} ({}); {} dropped in all",
                msg.get("execution").get("execution_id"), last, dropped.get());
    }

    /** The worker could not hand over a message: its action is dropped, counted once. A nested execution's
     * action is counted now and Python lets the rest of it go when its root comes, flagged {@code discard}. */
    private void lost(ObjectNode msg) {
        if (msg.has("discard")) return;  // counted when it was flagged
        JsonNode x = msg.get("execution");
        long root = x.path("root_id").asLong(), id = x.path("execution_id").asLong();
        dropped.incrementAndGet();
        if (id != root) {
            lostByWorker.add(root);
            while (lostByWorker.size() > 1000) lostByWorker.remove(lostByWorker.iterator().next());
        }
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd end) {
        INSTANCES.remove(this);
        long deadline = System.currentTimeMillis() + shutdownMillis;
        stopping = true;
        try {
            worker.join(shutdownMillis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List<ObjectNode> left = new ArrayList<>();
        queue.drainTo(left);
        long roots = 0;
        for (ObjectNode msg : left) {
            discardPlan(msg.get("execution"));
            JsonNode x = msg.get("execution");
            if (!msg.has("discard") && x.path("execution_id").asLong() == x.path("root_id").asLong()) roots++;
        }
        long n = dropped.addAndGet(roots);
        // Python stores what it holds now (and learns the final drop count), before the bridge stops
        JsonNode answer = null;
        String failure = null;
        if (target != null && (sent.get() > 0 || n > 0)) {
            ObjectNode msg = control(Math.max(0, deadline - System.currentTimeMillis()));
            msg.put("jvm_dropped", n);
            try {
                answer = Bridge.call("lineage.event", msg, target.options());
            } catch (Throwable t) {  // e.g. the JVM is shutting down (spark-sql): Python stores on its own exit
                failure = t.toString();
            }
        }
        String report = endReport(Math.max(n, pythonDropped.get()), left.size(), answer, failure);
        if (report != null) {
            LOG.warn(report);
        } else if (failure != null) {
            LOG.debug("Ushas lineage: no final flush at application end (nothing was dropped): {}", failure);
        }
    }

    /**
     * The one line logged at application end: how many actions were dropped (this JVM's and
     * Python's drops: its final answer, else its last known count), or {@code null} when nothing
     * was dropped and nothing is left pending. Every drop was logged when it happened (Python's
     * at most once a minute); this line is the total.
     */
    static String endReport(long jvmDropped, int notHandedOver, JsonNode python, String failure) {
        long total = jvmDropped;
        long pending = 0;
        long olDropped = 0;
        if (python != null && !python.has("error")) {
            total = Math.max(total, python.path("dropped").asLong(0));  // Python's count includes the JVM's
            pending = python.path("flushed").asBoolean(true) ? 0 : python.path("pending").asLong(0);
            olDropped = python.path("openlineage_dropped").asLong(0);
        }
        if (total == 0 && pending == 0 && olDropped == 0) return null;
        StringBuilder line = new StringBuilder("Ushas lineage: ").append(total)
                .append(" action(s) dropped in this application");
        if (notHandedOver > 0) line.append(" (").append(notHandedOver).append(" not handed over before it ended)");
        if (pending > 0) line.append("; ").append(pending).append(" still being stored when it ended");
        if (olDropped > 0) line.append("; ").append(olDropped).append(" OpenLineage event(s) not delivered");
        if (failure != null) line.append("; final flush failed: ").append(failure);
        line.append("; see 'ushas lineage status'");
        return line.toString();
    }

    /** A message to Python without an event: flush for up to {@code millis} (within the bridge timeout). */
    private ObjectNode control(long millis) {
        ObjectNode msg = Json.object();
        msg.set("ctx", target.ctx());
        msg.set("store", target.ctx());
        msg.put("source", sc.applicationId());
        if (openLineage != null) msg.set("openlineage", openLineage);
        double cap = Math.max(0.0, target.options().timeoutSeconds() - 1.0);
        msg.put("flush", Math.min(millis / 1000.0, cap));
        return msg;
    }

    /**
     * Waits until every action Spark reported before this call is stored by Python or counted as
     * dropped: Spark's listener bus empty, this listener's queue handed over, Python's capture queue
     * stored and its counters published. Never called on Spark's listener thread.
     *
     * @return JSON {@code {"flushed": bool, "handed_over": n, "dropped": n, "python": {...} | null}}
     */
    public String flush(long timeoutMillis) {
        long deadline = System.currentTimeMillis() + Math.max(0, timeoutMillis);
        boolean ok = true;
        ObjectNode out = Json.object();
        try {
            sc.listenerBus().waitUntilEmpty(Math.max(1, deadline - System.currentTimeMillis()));
        } catch (TimeoutException e) {
            ok = false;
        } catch (Throwable t) {  // a stopped bus: nothing more will come
            LOG.debug("Ushas lineage: listener bus not drained: {}", t.toString());
        }
        while (ok && (!queue.isEmpty() || finished.get() < offered.get()) && worker.isAlive()) {
            if (System.currentTimeMillis() >= deadline) {
                ok = false;
                break;
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                ok = false;
            }
        }
        JsonNode python = null;
        if (ok && target != null && sent.get() > 0) {
            try {
                ObjectNode msg = control(Math.max(0, deadline - System.currentTimeMillis()));
                msg.put("jvm_dropped", dropped.get());
                python = Bridge.call("lineage.event", msg, target.options());
                ok = python.path("flushed").asBoolean(false);
            } catch (Throwable t) {
                ok = false;
                out.put("error", t.toString());
            }
        }
        out.put("flushed", ok);
        out.put("handed_over", sent.get());
        out.put("dropped", dropped.get());
        if (python != null) out.set("python", python);
        else out.putNull("python");
        return out.toString();
    }

    /** {@link #flush(long)} on every live listener of this JVM: a JSON array of their answers. */
    public static String flushAll(long timeoutMillis) {
        long deadline = System.currentTimeMillis() + Math.max(0, timeoutMillis);
        ArrayNode all = Json.array();
        for (UshasLineageListener l : INSTANCES) {
            all.add(Json.parse(l.flush(Math.max(0, deadline - System.currentTimeMillis()))));
        }
        return all.toString();
    }

    /** Actions handed to Python and dropped so far (for tests and monitoring). */
    public long handedOver() {
        return sent.get();
    }

    public long droppedCount() {
        return dropped.get();
    }
}
