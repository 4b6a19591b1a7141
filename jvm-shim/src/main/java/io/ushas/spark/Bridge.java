package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import py4j.GatewayServer;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The JVM end of the bridge to Python. Two ways in:
 * <ul>
 *   <li>a PySpark driver calls {@link #register} over its own gateway (ushas_catalog.spark does it);</li>
 *   <li>otherwise (spark-submit / spark-sql with configuration only) the first call starts a Py4J
 *       {@link GatewayServer} and launches {@code python -m ushas_catalog.bridge}, which connects back and
 *       calls {@link #registerLaunched}; the process is stopped with the JVM.</li>
 * </ul>
 * Every call runs with a timeout so a crashed or hanging Python gives a clear error, never a hang.
 */
public final class Bridge {
    private static final Object LOCK = new Object();
    private static volatile PythonBackend backend;
    private static Process process;
    private static GatewayServer server;
    private static File processLog;
    private static final ExecutorService CALLS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "ushas-bridge-call");
        t.setDaemon(true);
        return t;
    });

    private Bridge() {}

    /** Called from a PySpark driver over its own gateway. */
    public static void register(PythonBackend b) {
        synchronized (LOCK) {
            backend = b;
            LOCK.notifyAll();
        }
    }

    /** Called by a launched bridge process: its backend and the port of its callback server. */
    public static void registerLaunched(PythonBackend b, int callbackPort) {
        synchronized (LOCK) {
            if (server != null) {
                server.resetCallbackClient(InetAddress.getLoopbackAddress(), callbackPort);
            }
            backend = b;
            LOCK.notifyAll();
        }
    }

    public static boolean isRegistered() {
        return backend != null;
    }

    /** The version of this jar, so Python can check it talks to the shim it built. */
    public static String version() {
        return Version.VERSION;
    }

    /** One request, one answer; errors answered by Python are returned as the JSON error node. */
    static JsonNode call(String op, ObjectNode request, BridgeOptions options) {
        PythonBackend b = backend(options);
        String payload = request.toString();
        Future<String> f = CALLS.submit(() -> b.call(op, payload));
        String answer;
        try {
            answer = f.get(options.timeoutSeconds(), TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge did not answer '" + op
                    + "' within " + options.timeoutSeconds() + " s (spark.sql.catalog.<name>.timeout)" + logTail());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Errors.UshasBridgeException("Ushas catalog: interrupted waiting for the Python bridge", e);
        } catch (ExecutionException e) {
            dropIfDead(b);
            Throwable cause = e.getCause();
            throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge failed on '" + op + "': "
                    + (cause == null ? e : cause).toString().lines().findFirst().orElse("") + logTail(), cause);
        }
        if (answer == null) {
            dropIfDead(b);
            throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge returned nothing for '" + op + "'"
                    + logTail());
        }
        return Json.parse(answer);
    }

    private static void dropIfDead(PythonBackend b) {
        synchronized (LOCK) {
            if (backend == b && (process == null || !process.isAlive())) {
                backend = null;  // the next call registers again or relaunches
            }
        }
    }

    private static PythonBackend backend(BridgeOptions options) {
        PythonBackend b = backend;
        if (b != null) return b;
        synchronized (LOCK) {
            if (backend != null) return backend;
            if (options.waitForRegistration()) {
                awaitRegistration(options, null);
                return backend;
            }
            launch(options);
            return backend;
        }
    }

    private static void launch(BridgeOptions options) {
        stopProcess();
        byte[] raw = new byte[24];
        new SecureRandom().nextBytes(raw);
        String secret = HexFormat.of().formatHex(raw);
        InetAddress lo = InetAddress.getLoopbackAddress();
        server = new GatewayServer.GatewayServerBuilder()
                .javaPort(0).javaAddress(lo).authToken(secret)
                .callbackClient(0, lo, secret)
                .build();
        server.start(true);
        try {
            processLog = File.createTempFile("ushas-bridge-", ".log");
            processLog.deleteOnExit();
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot create the bridge log file", e);
        }
        ProcessBuilder pb = new ProcessBuilder(options.python(), "-m", "ushas_catalog.bridge");
        Map<String, String> env = pb.environment();
        env.put("USHAS_BRIDGE_PORT", Integer.toString(server.getListeningPort()));
        env.put("USHAS_BRIDGE_SECRET", secret);
        pb.redirectOutput(ProcessBuilder.Redirect.appendTo(processLog));
        pb.redirectError(ProcessBuilder.Redirect.appendTo(processLog));
        pb.redirectInput(ProcessBuilder.Redirect.PIPE);  // the process exits when this pipe closes (JVM gone)
        try {
            process = pb.start();
        } catch (IOException e) {
            stopServer();
            throw new Errors.UshasBridgeException("Ushas catalog: cannot start the Python bridge with '"
                    + options.python() + "' (set spark.pyspark.python or PYSPARK_PYTHON): " + e.getMessage(), e);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(Bridge::stopProcess, "ushas-bridge-stop"));
        // the gateway's threads are not daemons: stop them with the SparkContext so the JVM can exit
        org.apache.spark.sql.SparkSession.getActiveSession().foreach(session -> {
            session.sparkContext().addSparkListener(new org.apache.spark.scheduler.SparkListener() {
                @Override
                public void onApplicationEnd(org.apache.spark.scheduler.SparkListenerApplicationEnd end) {
                    stopProcess();
                }
            });
            return null;
        });
        awaitRegistration(options, process);
    }

    private static void awaitRegistration(BridgeOptions options, Process p) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(options.startSeconds());
        while (backend == null) {
            if (p != null && !p.isAlive()) {
                String tail = logTail();
                stopProcess();
                throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge ('" + options.python()
                        + " -m ushas_catalog.bridge') exited with code " + p.exitValue() + tail);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                String tail = logTail();
                if (p != null) stopProcess();
                throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge did not register within "
                        + options.startSeconds() + " s" + (p == null
                        ? " (spark.sql.catalog.<name>.bridge=pyspark: call ushas_catalog.spark.register(spark))" : "")
                        + tail);
            }
            try {
                LOCK.wait(Math.max(1, Math.min(200, TimeUnit.NANOSECONDS.toMillis(left))));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new Errors.UshasBridgeException("Ushas catalog: interrupted starting the Python bridge", e);
            }
        }
    }

    private static String logTail() {
        File log = processLog;
        if (log == null || !log.exists()) return "";
        try {
            String text = Files.readString(log.toPath(), StandardCharsets.UTF_8).strip();
            if (text.isEmpty()) return "";
            return "\n--- bridge log (" + log + ") ---\n" + text.substring(Math.max(0, text.length() - 2000));
        } catch (IOException e) {
            return "";
        }
    }

    private static void stopProcess() {
        synchronized (LOCK) {
            if (process != null) {
                backend = null;
                try {
                    process.getOutputStream().close();
                } catch (IOException ignored) {
                    // already closed
                }
                process.destroy();
                try {
                    if (!process.waitFor(2, TimeUnit.SECONDS)) process.destroyForcibly();
                } catch (InterruptedException e) {
                    process.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
                process = null;
            }
            stopServer();
        }
    }

    private static void stopServer() {
        if (server != null) {
            server.shutdown();
            server = null;
        }
    }

    /** Options of one catalog instance that govern the bridge. */
    record BridgeOptions(String python, int timeoutSeconds, int startSeconds, boolean waitForRegistration) {}
}
