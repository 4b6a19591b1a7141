package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import py4j.GatewayServer;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;

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

    /** One request, one answer; errors answered by Python are returned as the JSON error node.
     *  The call waits at most {@code bridge.timeout} seconds; while it waits, the backend's liveness is
     *  checked every second (launched process alive, and a {@code ping} answered within
     *  {@code bridge.livenessTimeout} seconds), so a dead or hung Python is an error within seconds. */
    static JsonNode call(String op, ObjectNode request, BridgeOptions options) {
        PythonBackend b = backend(options);
        // when this call gives up (epoch ms): Python stops waiting for the store past it, so a call
        // abandoned here ends there and releases the store; a write's commit is fenced by it too
        request.put("deadline_ms", System.currentTimeMillis() + 1000L * options.timeoutSeconds());
        String json = request.toString();
        Path spooled = json.length() > INLINE_MAX ? spool(json) : null;
        try {
            return Json.parse(unspool(call(b, op, spooled == null ? json : "@" + spooled, options)));
        } finally {
            if (spooled != null) {
                try {
                    Files.deleteIfExists(spooled);
                } catch (IOException ignored) {
                    // a temp file left behind; nothing to tell Spark
                }
            }
        }
    }

    /** Longer messages travel as files: Py4J stalls ~44 ms on a message over ~8k characters, and a
     *  callback's long answer costs ~0.5 ms per 1k characters (measured); Python's
     *  {@code ushas_catalog.bridge.INLINE_MAX} matches. */
    static final int INLINE_MAX = 7000;
    private static Path spoolDir;

    /** Writes a long request to a file of a private temp directory; Python reads it as {@code @path}. */
    private static Path spool(String json) {
        try {
            Path dir;
            synchronized (LOCK) {
                if (spoolDir == null || !Files.isDirectory(spoolDir)) {
                    spoolDir = Files.createTempDirectory("ushas-bridge-");  // owner-only permissions
                    spoolDir.toFile().deleteOnExit();
                }
                dir = spoolDir;
            }
            Path file = Files.createTempFile(dir, "request-", ".json");
            Files.writeString(file, json, StandardCharsets.UTF_8);
            return file;
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot write a bridge request file: " + e, e);
        }
    }

    /** An answer as Python sent it: JSON, or {@code @path} of a temp file holding it (read, then deleted). */
    private static String unspool(String answer) {
        if (!answer.startsWith("@")) return answer;
        Path file = Path.of(answer.substring(1));
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot read the bridge's answer file: " + e, e);
        } finally {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a temp file left behind; nothing to tell Spark
            }
        }
    }

    /** One call on the calling thread (no hand-off to another thread and back: {@link Py4jCalls}); the
     *  {@link #watchdog} checks the backend's liveness for a call running longer than
     *  {@link #LIVENESS_PERIOD_MS} and ends it (closing its connection) when it is past its timeout, its
     *  Python died or hangs, or its thread was interrupted. A backend Py4J cannot be called that way on is
     *  called on a thread of {@link #CALLS}, the caller waiting and checking ({@link #callOnPoolThread}). */
    private static String call(PythonBackend b, String op, String payload, BridgeOptions options) {
        Py4jCalls.Target direct = Py4jCalls.of(b);
        if (direct == null) return callOnPoolThread(b, op, payload, options);
        InFlight f = new InFlight(b, op, options, Thread.currentThread());
        watch(f);
        String answer;
        try {
            answer = Py4jCalls.call(direct, op, payload, f);
        } catch (RuntimeException e) {
            Errors.UshasBridgeException failure = f.failure;
            if (failure != null) throw failure;  // the watchdog ended it and said why
            Errors.UshasBridgeException died = relaunchIfDied(b, options, op, DEATH_GRACE_MS);
            if (died != null) throw died;
            dropIfDead(b, options);
            throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge failed on '" + op + "': "
                    + reason(e) + logTail(), e);
        } finally {
            IN_FLIGHT.remove(f);
        }
        if (answer == null) {
            dropIfDead(b, options);
            throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge returned nothing for '" + op + "'"
                    + logTail());
        }
        return answer;  // an answer that came after the watchdog gave up is still the answer
    }

    /** A call in flight on its caller's thread, as the watchdog sees it. */
    private static final class InFlight implements Py4jCalls.Watch {
        final PythonBackend backend;
        final String op;
        final BridgeOptions options;
        final Thread caller;
        final long start = System.nanoTime();
        final long deadline;
        volatile long nextCheck;
        volatile py4j.Py4JClientConnection connection;
        volatile Errors.UshasBridgeException failure;

        InFlight(PythonBackend backend, String op, BridgeOptions options, Thread caller) {
            this.backend = backend;
            this.op = op;
            this.options = options;
            this.caller = caller;
            this.deadline = start + TimeUnit.SECONDS.toNanos(options.timeoutSeconds());
            this.nextCheck = start + TimeUnit.MILLISECONDS.toNanos(LIVENESS_PERIOD_MS);
        }

        @Override
        public void holding(py4j.Py4JClientConnection c) {
            connection = c;
            if (failure != null) close(c);  // the watchdog gave up before the call took its connection
        }

        @Override
        public boolean abandoned() {
            return failure != null;
        }

        /** Ends the call with {@code why}: its connection is closed, which unblocks the caller's read. A
         *  PySpark driver thread's own connection is not (see {@link Py4jCalls#closable}): that call ends when
         *  its Python does (Python bounds its own waits by the request's deadline). */
        void fail(Errors.UshasBridgeException why) {
            if (failure != null) return;
            failure = why;
            py4j.Py4JClientConnection c = connection;
            if (c != null) close(c);
        }

        private static void close(py4j.Py4JClientConnection c) {
            if (!Py4jCalls.closable(c)) return;
            try {
                c.shutdown();
            } catch (RuntimeException ignored) {
                // already closed
            }
        }
    }

    private static final java.util.Set<InFlight> IN_FLIGHT = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Backends whose liveness check runs now (one at a time per backend). By identity: a Py4J proxy's
     *  {@code hashCode} / {@code equals} would be calls into Python. */
    private static final java.util.Set<PythonBackend> CHECKING =
            java.util.Collections.synchronizedSet(java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));
    /** How often the watchdog looks at the calls in flight: their timeouts and interrupts are seen this late
     *  at most; liveness is checked every {@link #LIVENESS_PERIOD_MS} per call. */
    private static final long WATCH_TICK_MS = 100;
    private static volatile boolean watching;

    private static void watch(InFlight f) {
        IN_FLIGHT.add(f);
        if (watching) return;
        synchronized (IN_FLIGHT) {
            if (watching) return;
            Thread t = new Thread(Bridge::watchdog, "ushas-bridge-watchdog");
            t.setDaemon(true);
            t.start();
            watching = true;
        }
    }

    /** The one thread that watches calls in flight (it never waits on Python itself: liveness checks run on
     *  a thread of {@link #CALLS}, so one hung check delays no other call's timeout). */
    private static void watchdog() {
        while (true) {
            try {
                Thread.sleep(WATCH_TICK_MS);
            } catch (InterruptedException e) {
                return;
            }
            try {
                watchOnce();
            } catch (RuntimeException | Error e) {  // the watchdog never dies: log and go on
                System.err.println("Ushas catalog: the bridge watchdog failed: " + e);
            }
        }
    }

    private static void watchOnce() {
        long now = System.nanoTime();
        Map<PythonBackend, java.util.List<InFlight>> due = new java.util.IdentityHashMap<>();
        for (InFlight f : IN_FLIGHT) {
            if (f.failure != null) continue;
            if (f.caller.isInterrupted()) {
                f.fail(new Errors.UshasBridgeException("Ushas catalog: interrupted waiting for the Python bridge"));
            } else if (now - f.deadline >= 0) {
                f.fail(timedOut(f.op, f.options));
            } else if (now - f.nextCheck >= 0) {
                due.computeIfAbsent(f.backend, k -> new java.util.ArrayList<>()).add(f);
            }
        }
        for (Map.Entry<PythonBackend, java.util.List<InFlight>> e : due.entrySet()) {
            if (!CHECKING.add(e.getKey())) continue;
            try {
                CALLS.submit(() -> {
                    try {
                        checkLiveness(e.getKey(), e.getValue());
                    } finally {
                        CHECKING.remove(e.getKey());
                    }
                });
            } catch (RuntimeException rejected) {
                CHECKING.remove(e.getKey());
            }
        }
    }

    /** The checks a waiting call made every period before: the launched process alive, a ping answered. */
    private static void checkLiveness(PythonBackend b, java.util.List<InFlight> calls) {
        for (InFlight f : calls) {
            if (f.failure != null || !IN_FLIGHT.contains(f)) continue;
            Errors.UshasBridgeException died = relaunchIfDied(b, f.options, f.op, 0);
            if (died != null) {
                f.fail(died);
                continue;
            }
            String dead = livenessProblem(b, f.options);
            if (dead != null && IN_FLIGHT.contains(f)) {
                f.fail(notResponding(b, f.op, f.start, dead, f.options));
                abandon(b);
                continue;
            }
            f.nextCheck = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LIVENESS_PERIOD_MS);
        }
    }

    /** A call past its {@code bridge.timeout} while its backend still answers liveness checks. */
    private static Errors.UshasBridgeException timedOut(String op, BridgeOptions options) {
        return new Errors.UshasBridgeException("Ushas catalog: the Python bridge did not answer '" + op
                + "' within " + options.timeoutSeconds() + " s (spark.sql.catalog." + options.catalog()
                + ".bridge.timeout); it still answers liveness checks, so this call itself hangs" + logTail());
    }

    /** A call (started at {@code start}, nanoTime) whose backend failed its liveness check ({@code dead}: why);
     *  made before the backend is abandoned, so that it names the process that did not answer. */
    private static Errors.UshasBridgeException notResponding(PythonBackend b, String op, long start, String dead,
                                                             BridgeOptions options) {
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        return new Errors.UshasBridgeException("Ushas catalog: the Python bridge" + describe(b)
                + " is not responding: no answer to '" + op + "' after " + waited + " ms and " + dead
                + " (spark.sql.catalog." + options.catalog() + ".bridge.livenessTimeout)" + logTail());
    }

    /** The call on a thread of {@link #CALLS} while the caller waits for it, checking liveness every period. */
    private static String callOnPoolThread(PythonBackend b, String op, String payload, BridgeOptions options) {
        Future<String> f = CALLS.submit(() -> b.call(op, payload));
        long start = System.nanoTime();
        long deadline = start + TimeUnit.SECONDS.toNanos(options.timeoutSeconds());
        String answer;
        while (true) {
            long now = System.nanoTime();
            long wait = Math.min(deadline - now, TimeUnit.MILLISECONDS.toNanos(LIVENESS_PERIOD_MS));
            try {
                answer = f.get(Math.max(1, wait), TimeUnit.NANOSECONDS);
                break;
            } catch (TimeoutException e) {
                if (System.nanoTime() - deadline >= 0) {
                    f.cancel(true);
                    throw timedOut(op, options);
                }
                Errors.UshasBridgeException died = relaunchIfDied(b, options, op, 0);
                if (died != null) {
                    f.cancel(true);
                    throw died;
                }
                String dead = livenessProblem(b, options);
                if (dead != null) {
                    f.cancel(true);
                    Errors.UshasBridgeException failure = notResponding(b, op, start, dead, options);
                    abandon(b);
                    throw failure;
                }
            } catch (InterruptedException e) {
                f.cancel(true);
                Thread.currentThread().interrupt();
                throw new Errors.UshasBridgeException("Ushas catalog: interrupted waiting for the Python bridge", e);
            } catch (ExecutionException e) {
                Errors.UshasBridgeException died = relaunchIfDied(b, options, op, DEATH_GRACE_MS);
                if (died != null) {
                    throw died;
                }
                dropIfDead(b, options);
                Throwable cause = e.getCause();
                throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge failed on '" + op + "': "
                        + reason(cause == null ? e : cause) + logTail(), cause);
            }
        }
        if (answer == null) {
            dropIfDead(b, options);
            throw new Errors.UshasBridgeException("Ushas catalog: the Python bridge returned nothing for '" + op + "'"
                    + logTail());
        }
        return answer;
    }

    /** One line saying why a call failed: a Python exception's own line (the last of its traceback, which
     *  Py4J passes as the message), else the exception's first line. */
    static String reason(Throwable t) {
        String text = t.toString();
        if (text.contains("Traceback (most recent call last)")) {
            String last = "";
            for (String line : text.lines().toList()) {
                if (!line.isBlank()) last = line.strip();
            }
            return last;
        }
        return text.lines().findFirst().orElse("");
    }

    /** How often a waiting call checks that the backend is alive. */
    private static final long LIVENESS_PERIOD_MS = 1000;

    /** Why the backend is not alive ("its process ended (signal 9)", "a ping ... no answer"), or null. */
    private static String livenessProblem(PythonBackend b, BridgeOptions options) {
        Process p;
        synchronized (LOCK) {
            p = backend == b ? process : null;
        }
        if (p != null && !p.isAlive()) return "its process ended (" + ended(p.exitValue()) + ")";
        Future<String> ping = CALLS.submit(() -> b.call("ping", "{}"));
        try {
            String pong = ping.get(options.livenessSeconds(), TimeUnit.SECONDS);
            return pong != null && pong.contains("pong") ? null : "a liveness check (ping) got " + pong;
        } catch (TimeoutException e) {
            ping.cancel(true);
            return "a liveness check (ping) got no answer within " + options.livenessSeconds() + " s";
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            return "a liveness check (ping) failed: " + cause.toString().lines().findFirst().orElse("");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static String describe(PythonBackend b) {
        synchronized (LOCK) {
            if (backend == b && process != null) {
                return " ('python -m ushas_catalog.bridge', pid " + process.pid() + ")";
            }
        }
        return " (this PySpark driver's backend)";
    }

    /** A backend that failed its liveness check: a launched process is stopped (the next call starts a
     *  new one); a PySpark driver's backend stays registered (only the driver can register again). */
    private static void abandon(PythonBackend b) {
        synchronized (LOCK) {
            if (backend == b && process != null) stopProcess();
        }
    }

    /**
     * A launched bridge process that is no longer alive: a new one is started at once (its death costs
     * only the call in flight) and how the old one ended is answered ("signal 9", "exit code 1");
     * null when {@code b} is not a launched process that died. Deciding to restart lives here because
     * Python is exactly what is gone.
     */
    private static Errors.UshasBridgeException relaunchIfDied(PythonBackend b, BridgeOptions options, String op,
                                                              long graceMs) {
        synchronized (LOCK) {
            if (backend != b || process == null) return null;
            try {
                // a call failing on a closed socket can be seen a moment before the process is reaped
                if (!process.waitFor(graceMs, TimeUnit.MILLISECONDS)) return null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
            String message = "Ushas catalog: the ushas bridge process died (" + ended(process.exitValue())
                    + ") during '" + op + "'; restarted: run the statement again" + logTail();  // the dead one's log
            launch(options);
            return new Errors.UshasBridgeException(message);
        }
    }

    private static final long DEATH_GRACE_MS = 1000;

    /** Java reports a process killed by signal N as exit value 128 + N. */
    private static String ended(int exit) {
        return exit > 128 && exit < 128 + 65 ? "signal " + (exit - 128) : "exit code " + exit;
    }

    /** After a failed call: a launched process that ended is dropped (the next call starts a new one); this
     *  PySpark driver's backend is dropped only when it no longer answers a ping (its Python is gone) -- a
     *  call that failed in Python (an exception instead of an answer) is that call's failure, and a launched
     *  process must not take the driver's place (its hooks and lineage state are not the driver's). */
    private static void dropIfDead(PythonBackend b, BridgeOptions options) {
        synchronized (LOCK) {
            if (backend != b) return;
            if (process != null) {
                if (!process.isAlive()) backend = null;  // the next call relaunches
                return;
            }
        }
        if (livenessProblem(b, options) == null) return;
        synchronized (LOCK) {
            if (backend == b && process == null) backend = null;  // the next call registers again or relaunches
        }
    }

    private static PythonBackend backend(BridgeOptions options) {
        PythonBackend b = backend;
        Process p = process;
        if (b != null && (p == null || p.isAlive())) return b;
        synchronized (LOCK) {
            if (backend != null && process != null && !process.isAlive()) {
                stopProcess();  // died between calls: nothing was in flight, start a new one for this call
            }
            if (backend != null) return backend;
            if (process != null && process.isAlive()) {  // another thread's launch is registering: share it
                awaitRegistration(options, process);
                return backend;
            }
            if (options.waitForRegistration()) {
                awaitRegistration(options, null);
                return backend;
            }
            launch(options);
            return backend;
        }
    }

    /** The threads of the current gateway: not daemons (py4j's), so they would keep a JVM whose main
     *  has ended alive; see {@link #stopWithTheApplication}. */
    private static final java.util.Set<Thread> GATEWAY_THREADS = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private static void launch(BridgeOptions options) {
        stopProcess();
        byte[] raw = new byte[24];
        new SecureRandom().nextBytes(raw);
        String secret = HexFormat.of().formatHex(raw);
        InetAddress lo = InetAddress.getLoopbackAddress();
        java.util.Set<Thread> before = Thread.getAllStackTraces().keySet();
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
        stopWithTheApplication();
        awaitRegistration(options, process);
        // py4j's unnamed threads started with this gateway and its callback client (at registration)
        GATEWAY_THREADS.clear();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(t) && !t.isDaemon() && t.getName().matches("Thread-\\d+|pool-\\d+-thread-\\d+")) {
                GATEWAY_THREADS.add(t);
            }
        }
    }

    private static boolean stopsWithTheApplication;

    /** Once per JVM: the gateway's threads are not daemons, so whatever bridge runs is stopped with
     *  the SparkContext (and the JVM), or the JVM could not exit; a bridge started again later, from
     *  any thread, is covered too. */
    private static void stopWithTheApplication() {
        if (stopsWithTheApplication) return;
        stopsWithTheApplication = true;
        // after the SparkContext has stopped (Spark's hooks run by priority, higher first; the context's is
        // SPARK_CONTEXT_SHUTDOWN_PRIORITY): a JVM hook of our own would race it and stop Python before the
        // lineage listener's last flush at application end (spark-sql exits through the shutdown hooks)
        org.apache.spark.util.ShutdownHookManager.addShutdownHook(
                org.apache.spark.util.ShutdownHookManager.SPARK_CONTEXT_SHUTDOWN_PRIORITY() - 10,
                new scala.runtime.AbstractFunction0<scala.runtime.BoxedUnit>() {
                    @Override
                    public scala.runtime.BoxedUnit apply() {
                        stopProcess();
                        return scala.runtime.BoxedUnit.UNIT;
                    }
                });
        org.apache.spark.SparkContext sc = org.apache.spark.SparkContext$.MODULE$.getActive().getOrElse(() -> null);
        if (sc != null) {
            sc.addSparkListener(new org.apache.spark.scheduler.SparkListener() {
                @Override
                public void onApplicationEnd(org.apache.spark.scheduler.SparkListenerApplicationEnd end) {
                    stopProcess();
                }
            });
        }
        Thread watchdog = new Thread(Bridge::stopWhenMainEnds, "ushas-bridge-exit");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    /**
     * An application that ends without stopping Spark (a spark-submit app with no {@code spark.stop()})
     * leaves its JVM waiting for non-daemon threads once main has returned; if the gateway's are the
     * only ones left, Spark is stopped as its own shutdown would (listeners told, lineage flushed
     * through the bridge), then the bridge, so the JVM ends with its own exit status.
     */
    private static void stopWhenMainEnds() {
        while (true) {
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                return;
            }
            Map<Thread, StackTraceElement[]> all = Thread.getAllStackTraces();
            boolean mainEnded = false;
            boolean onlyGateway = true;
            for (Map.Entry<Thread, StackTraceElement[]> e : all.entrySet()) {
                Thread t = e.getKey();
                if (t.getName().equals("DestroyJavaVM")) {
                    mainEnded = true;
                } else if (!t.isDaemon() && t.isAlive() && !GATEWAY_THREADS.contains(t) && !inPy4j(e.getValue())) {
                    onlyGateway = false;
                }
            }
            if (mainEnded && onlyGateway && server != null) {
                org.apache.spark.SparkContext$.MODULE$.getActive().foreach(sc -> {
                    sc.stop();
                    return null;
                });
                stopProcess();
                return;
            }
        }
    }

    private static boolean inPy4j(StackTraceElement[] stack) {
        for (StackTraceElement f : stack) if (f.getClassName().startsWith("py4j.")) return true;
        return false;
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
    record BridgeOptions(String catalog, String python, int timeoutSeconds, int startSeconds, int livenessSeconds,
                         boolean waitForRegistration) {
        static final int DEFAULT_TIMEOUT_S = 60;
        static final int DEFAULT_START_S = 60;
        static final int DEFAULT_LIVENESS_S = 5;

        /**
         * The options of catalog {@code name}: {@code option} reads {@code spark.sql.catalog.<name>.<key>},
         * {@code conf} any Spark conf. Keys: {@code bridge.timeout} (seconds one call may take, default 60;
         * the older {@code timeout} is read too), {@code bridge.livenessTimeout} (seconds a liveness ping may
         * take while a call waits, default 5), {@code bridge.startTimeout} (older: {@code startTimeout},
         * default 60), {@code bridge} ({@code auto} | {@code pyspark}), {@code python}.
         */
        static BridgeOptions of(String name, UnaryOperator<String> option, UnaryOperator<String> conf) {
            String python = option.apply("python");
            if (python == null) python = conf.apply("spark.pyspark.python");
            if (python == null) python = System.getenv("PYSPARK_PYTHON");
            if (python == null) python = "python3";
            int timeout = seconds(name, option, "bridge.timeout", "timeout", DEFAULT_TIMEOUT_S);
            int start = seconds(name, option, "bridge.startTimeout", "startTimeout", DEFAULT_START_S);
            int liveness = seconds(name, option, "bridge.livenessTimeout", null, DEFAULT_LIVENESS_S);
            String mode = option.apply("bridge");
            return new BridgeOptions(name, python, timeout, start, liveness, "pyspark".equalsIgnoreCase(mode));
        }

        private static int seconds(String name, UnaryOperator<String> option, String key, String older, int dflt) {
            String v = option.apply(key);
            if (v == null && older != null) v = option.apply(older);
            if (v == null) return dflt;
            try {
                int s = Integer.parseInt(v.trim());
                if (s > 0) return s;
            } catch (NumberFormatException ignored) {
                // reported below
            }
            throw Errors.invalidArgument("spark.sql.catalog." + name + "." + key
                    + " must be a whole number of seconds > 0, not '" + v + "'");
        }
    }
}
