package io.ushas.spark;

import py4j.CallbackClient;
import py4j.ClientServerConnection;
import py4j.Gateway;
import py4j.Protocol;
import py4j.Py4JClientConnection;
import py4j.Py4JException;
import py4j.Py4JNetworkException;
import py4j.Py4JPythonClient;
import py4j.PythonClient;
import py4j.reflection.PythonProxyHandler;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.SocketTimeoutException;

/**
 * A call of the Python backend made on the CALLING thread over a Py4J connection this class holds, so that
 * another thread (the bridge's watchdog, {@link Bridge}) can end a call that hangs or whose Python died by
 * closing that connection. It sends exactly what Py4J's own proxy ({@link PythonProxyHandler#invoke}) sends
 * for {@code backend.call(op, json)} — the same command, through the same client's connections (its pool in
 * classic mode; in pinned-thread mode the calling thread's connection, so a PySpark driver's own statement is
 * answered by its own Python thread; a thread without one goes through the pool as before) — and reads the
 * answer the same way; only the connection is taken and
 * given back here instead of inside {@code CallbackClient.sendCommand}.
 *
 * <p>Py4J offers no public way to do this: its {@code getConnectionLock} / {@code giveBackConnection} /
 * {@code shouldRetrySendCommand} are protected and the proxy's target id is private; they are reached by
 * reflection once. When any of that is missing (another Py4J, or a backend that is not a Py4J proxy),
 * {@link #of} answers null and the bridge calls the backend as before, on a thread of its own.
 */
final class Py4jCalls {
    private Py4jCalls() {}

    /** The Python object a Py4J proxy stands for: its id and the gateway whose callback client reaches it. */
    record Target(String id, Gateway gateway, CallbackClient client) {}

    /** What a call tells its watcher: the connection it holds, and whether it was given up meanwhile. */
    interface Watch {
        void holding(Py4JClientConnection connection);

        boolean abandoned();
    }

    private static final Field ID;
    private static final Field GATEWAY;
    private static final Method GET_CONNECTION;
    private static final Method GIVE_BACK;
    private static final Method SHOULD_RETRY;

    static {
        Field id = null;
        Field gateway = null;
        Method get = null;
        Method giveBack = null;
        Method retry = null;
        try {
            id = PythonProxyHandler.class.getDeclaredField("id");
            gateway = PythonProxyHandler.class.getDeclaredField("gateway");
            get = CallbackClient.class.getDeclaredMethod("getConnectionLock");
            giveBack = CallbackClient.class.getDeclaredMethod("giveBackConnection", Py4JClientConnection.class);
            retry = CallbackClient.class.getDeclaredMethod("shouldRetrySendCommand", Py4JClientConnection.class,
                    Py4JNetworkException.class);
            for (var m : new java.lang.reflect.AccessibleObject[] {id, gateway, get, giveBack, retry}) {
                m.setAccessible(true);
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            id = null;  // another Py4J: calls go through the proxy (Bridge's call thread)
        }
        ID = id;
        GATEWAY = gateway;
        GET_CONNECTION = get;
        GIVE_BACK = giveBack;
        SHOULD_RETRY = retry;
    }

    /** How to call {@code backend} directly, or null when it is not a Py4J proxy this class can call. */
    static Target of(Object backend) {
        if (ID == null || !Proxy.isProxyClass(backend.getClass())) return null;
        if (!(Proxy.getInvocationHandler(backend) instanceof PythonProxyHandler handler)) return null;
        try {
            Gateway gateway = (Gateway) GATEWAY.get(handler);
            Py4JPythonClient client = gateway.getCallbackClient();
            if (!(client instanceof CallbackClient callbacks)) return null;
            // pinned-thread mode (a PySpark driver): only a thread that already holds its own connection (the
            // driver's thread running this statement, or one that called before); any other would open a
            // connection (and a Python thread) of its own, per thread -- Spark Connect runs every statement on a
            // new thread -- where the bridge's pool threads reuse theirs
            if (client instanceof PythonClient pinned && pinned.getPerThreadConnection() == null) return null;
            return new Target((String) ID.get(handler), gateway, callbacks);
        } catch (IllegalAccessException | RuntimeException e) {
            return null;
        }
    }

    /** Whether closing {@code connection} ends only the call made on it: not when it is the connection a
     *  Python thread opened to call the JVM (pinned-thread mode: the PySpark driver's own thread, waiting in
     *  its call of Spark, answers this callback itself; closing it would break that thread's session). */
    static boolean closable(Py4JClientConnection connection) {
        return !(connection instanceof ClientServerConnection c) || c.isInitiatedFromClient();
    }

    /** {@code backend.call(op, payload)} on this thread: Python's answer, or a {@link Py4JException} (Python's
     *  exception, or the connection failed or was closed by the watcher). */
    static String call(Target target, String op, String payload, Watch watch) {
        String command = PythonProxyHandler.CALL_PROXY_COMMAND_NAME + target.id() + "\ncall\n"
                + target.gateway().getReturnObject(op).getCommandPart() + "\n"
                + target.gateway().getReturnObject(payload).getCommandPart() + "\n"
                + Protocol.END + "\n";
        String answer = send(target.client(), command, watch, true);
        try {
            return (String) Protocol.getReturnValue(answer, target.gateway());
        } catch (Py4JException e) {
            throw e;
        } catch (Throwable t) {
            throw new Py4JException(t);
        }
    }

    /** {@code CallbackClient.sendCommand} with the connection shown to {@code watch} while the answer is awaited. */
    private static String send(CallbackClient client, String command, Watch watch, boolean mayRetry) {
        Py4JClientConnection connection = (Py4JClientConnection) invoke(GET_CONNECTION, client);
        if (connection == null) throw new Py4JException("Cannot obtain a new communication channel");
        watch.holding(connection);
        String answer;
        try {
            answer = connection.sendCommand(command);
        } catch (Py4JNetworkException e) {
            connection.shutdown(e.getCause() instanceof SocketTimeoutException);
            // as Py4J: a pooled connection that had gone stale before the command was sent is retried once
            if (mayRetry && !watch.abandoned() && (Boolean) invoke(SHOULD_RETRY, client, connection, e)) {
                return send(client, command, watch, false);
            }
            throw new Py4JException("Error while sending a command.", e);
        } catch (RuntimeException e) {
            connection.shutdown();
            throw new Py4JException("Error while sending a command.", e);
        }
        invoke(GIVE_BACK, client, connection);
        return answer;
    }

    private static Object invoke(Method method, Object on, Object... args) {
        try {
            return method.invoke(on, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) throw r;
            throw new Py4JException(cause);
        } catch (IllegalAccessException e) {
            throw new Py4JException(e);
        }
    }
}
