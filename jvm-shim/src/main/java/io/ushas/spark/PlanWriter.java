package io.ushas.spark;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.CommandExecutionMode;

import io.ushas.spark.plan.PlanJson;

/**
 * Static entry points of the plan walker (format: docs/internals/plan-json.md). Used by {@code df.lineage()}
 * through Py4J and reusable from a QueryExecutionListener.
 *
 * <p>Transport: Py4J answers of more than ~8 k characters stall ~44 ms (SPARK-4.3-FACTS.md: py4j's
 * 8 k-char BufferedWriter splits the answer, Nagle holds the tail until Python's delayed ACK).
 * The {@code export*} methods that take the Py4J gateway server therefore set TCP_NODELAY on the
 * socket of the connection serving the calling Python thread and answer inline at any size; when
 * that socket cannot be found (or for {@link #export(LogicalPlan, int)}) an answer above
 * {@code inlineLimit} characters goes to a private temp file whose path is returned instead and
 * which the Python reader deletes. One Python call = one Py4J round trip.
 */
public final class PlanWriter {
    /** Inline answers up to this many characters; larger ones go through a temp file. */
    public static final int DEFAULT_INLINE_LIMIT = 7000;

    private PlanWriter() {}

    /** The plan JSON of an analyzed plan. */
    public static String toJson(LogicalPlan plan) {
        return PlanJson.write(plan);
    }

    /** The JSON itself (starts with '{') when at most {@code inlineLimit} chars, else the path
     * of a temp file (mode 600) holding it in UTF-8, which the caller must delete. */
    public static String export(LogicalPlan plan, int inlineLimit) throws IOException {
        return deliver(PlanJson.write(plan), inlineLimit, false);
    }

    public static String export(LogicalPlan plan) throws IOException {
        return export(plan, DEFAULT_INLINE_LIMIT);
    }

    /** {@link #export(LogicalPlan, int)}, inline at any size when TCP_NODELAY could be set on the
     * Py4J connection of the calling thread ({@code gatewayServer}: Python's
     * {@code gateway.java_gateway_server}; null: no such attempt). */
    public static String exportPlan(LogicalPlan plan, Object gatewayServer, int inlineLimit) throws IOException {
        return deliver(PlanJson.write(plan), inlineLimit, noDelay(gatewayServer));
    }

    /** The plan JSON of a Dataset's analyzed plan, in one Py4J round trip ({@code df.lineage()}). */
    public static String exportDataset(Dataset<?> ds, Object gatewayServer, int inlineLimit) throws IOException {
        return exportPlan(ds.queryExecution().analyzed(), gatewayServer, inlineLimit);
    }

    /** The plan JSON of a SQL statement analyzed WITHOUT executing it (commands such as INSERT,
     * CTAS, MERGE are analyzed with {@code CommandExecutionMode.SKIP}), in one Py4J round trip. */
    public static String exportSql(SparkSession spark, String sql, Object gatewayServer, int inlineLimit)
            throws IOException, ParseException {
        return exportPlan(analyzeSql(spark, sql), gatewayServer, inlineLimit);
    }

    /** The analyzed plan of {@code sql}, commands not executed. */
    public static LogicalPlan analyzeSql(SparkSession spark, String sql) throws ParseException {
        LogicalPlan parsed = spark.sessionState().sqlParser().parsePlan(sql);
        return spark.sessionState().executePlan(parsed, CommandExecutionMode.SKIP()).analyzed();
    }

    private static String deliver(String json, int inlineLimit, boolean inline) throws IOException {
        if (inline || json.length() <= inlineLimit) {
            return json;
        }
        Path file = Files.createTempFile("ushas-plan-", ".json",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.write(file, json.getBytes(StandardCharsets.UTF_8));
        return file.toString();
    }

    /**
     * Sets TCP_NODELAY on the socket answering the calling thread's Py4J command; true when done.
     * Pinned-thread mode (pyspark's default, py4j ClientServer): the connection serving this JVM
     * thread is the callback client's per-thread connection. Classic GatewayServer mode: every
     * open connection of the server (the current one among them).
     */
    static boolean noDelay(Object gatewayServer) {
        if (!(gatewayServer instanceof py4j.GatewayServer)) {
            return false;
        }
        try {
            py4j.GatewayServer server = (py4j.GatewayServer) gatewayServer;
            Object client = server.getGateway().getCallbackClient();
            if (client instanceof py4j.Py4JPythonClientPerThread) {
                py4j.ClientServerConnection conn = ((py4j.Py4JPythonClientPerThread) client).getPerThreadConnection();
                if (conn != null && conn.getSocket() != null) {
                    conn.getSocket().setTcpNoDelay(true);
                    return true;
                }
            }
            Field f = py4j.GatewayServer.class.getDeclaredField("connections");
            f.setAccessible(true);
            List<?> connections = (List<?>) f.get(server);
            boolean any = false;
            synchronized (connections) {
                for (Object c : connections) {
                    Socket s = ((py4j.Py4JServerConnection) c).getSocket();
                    if (s != null) {
                        s.setTcpNoDelay(true);
                        any = true;
                    }
                }
            }
            return any;
        } catch (ReflectiveOperationException | IOException | RuntimeException e) {
            return false;
        }
    }

    /** Nanoseconds one serialization of {@code plan} takes in the JVM (benchmarks: separates the
     * walk from the transport). */
    public static long walkNanos(LogicalPlan plan) {
        long start = System.nanoTime();
        String json = PlanJson.write(plan);
        long elapsed = System.nanoTime() - start;
        return json.isEmpty() ? -1 : elapsed;
    }

    /** The plan format version this jar writes. */
    public static int formatVersion() {
        return PlanJson.VERSION;
    }
}
