package io.ushas.spark;

import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart;

/**
 * Which client an execution ran for, when a server runs queries for many clients: a Spark Connect session
 * (its session id, the client's user and client type) or a Thrift JDBC/ODBC session (its session id, the JDBC
 * user and the client's address). For the lineage listener, which records them with each run.
 *
 * <p>Spark says it on the listener bus, not to a {@code QueryExecutionListener}: Connect posts
 * {@code SparkListenerConnectOperationStarted} (job tag, session id, user id and name, and the request with
 * its {@code client_type}) before the operation's executions, whose {@code SparkListenerSQLExecutionStart}
 * carries that job tag; the Thrift server posts {@code SparkListenerThriftServerSessionCreated} (session id,
 * user, address) and {@code SparkListenerThriftServerOperationStart} (session id, user, job group id), and
 * the statement's executions carry that job group. All arrive on the listener's one thread, in order.
 * The classes of either server are touched only when their events arrive (a Spark without them works).
 * Bounded: the last {@value #MAX} operations and sessions of each kind.
 */
final class ClientSessions {
    static final int MAX = 1000;
    private static final String CONNECT_STARTED = "org.apache.spark.sql.connect.service.SparkListenerConnectOperationStarted";
    private static final String THRIFT = "org.apache.spark.sql.hive.thriftserver.ui.SparkListenerThriftServer";

    /** One client as recorded with a run. */
    record Client(String kind, String session, String user, String clientType) {}

    private final Map<String, Client> byJobTag = bounded();      // Connect operations
    private final Map<String, Client> byJobGroup = bounded();    // Thrift statements
    private final Map<String, String> thriftAddress = bounded(); // Thrift session id -> client address
    private final Map<Long, Client> byExecution = bounded();

    private static <K, V> Map<K, V> bounded() {
        return new LinkedHashMap<>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
                return size() > MAX;
            }
        };
    }

    /** Spark's other events: remembers the clients of operations and executions (listener thread). */
    void observe(SparkListenerEvent event) {
        String name = event.getClass().getName();
        if (event instanceof SparkListenerSQLExecutionStart s) {
            Client c = null;
            if (!byJobTag.isEmpty()) {
                var tags = s.jobTags().iterator();
                while (c == null && tags.hasNext()) c = byJobTag.get(tags.next());
            }
            if (c == null && !byJobGroup.isEmpty() && s.jobGroupId().isDefined()) c = byJobGroup.get(s.jobGroupId().get());
            if (c != null) byExecution.put(s.executionId(), c);
        } else if (name.equals(CONNECT_STARTED)) {
            Connect.started(event, byJobTag);
        } else if (name.startsWith(THRIFT)) {
            Thrift.event(event, byJobGroup, thriftAddress);
        }
    }

    /** The client of an execution (else of its root execution), or null: not a server's client. */
    Client of(long executionId, long rootId) {
        Client c = byExecution.remove(executionId);
        if (c == null && rootId != executionId) c = byExecution.get(rootId);
        return c;
    }

    /** Adds the client to a lineage action: its user and application name replace the server's; the
     * session id and client type are added. */
    static void describe(ObjectNode action, Client c, QueryExecution qe) {
        if (c == null) return;
        if (c.user() != null && !c.user().isEmpty()) action.put("user", c.user());
        String app = appName(qe);
        if (app != null) action.put("application_name", app);
        ObjectNode client = action.putObject("client");
        client.put("kind", c.kind());
        client.put("session", c.session());
        if (c.clientType() != null) client.put("type", c.clientType());
    }

    /** The client's own application name: its session's {@code spark.app.name} (a Connect client's
     * {@code builder.appName(...)} sets it there), or null. */
    private static String appName(QueryExecution qe) {
        try {
            return qe.sparkSession().conf().get("spark.app.name", null);
        } catch (Throwable t) {
            return null;
        }
    }

    /** Whether {@code qe} only reads the result rows of a command that already ran as its own execution
     * (what a server does with every statement's result, e.g. the Thrift server's {@code collect()} of
     * {@code spark.sql(statement)}): a root query execution whose commands were executed eagerly into a
     * {@code CommandResult} (already computed: asking for it executes nothing). */
    static boolean isCommandResult(QueryExecution qe) {
        try {
            if (qe.logical() instanceof org.apache.spark.sql.catalyst.plans.logical.CommandResult) return true;
            return qe.mode() == org.apache.spark.sql.execution.CommandExecutionMode.ALL()
                    && qe.analyzed() instanceof org.apache.spark.sql.catalyst.plans.logical.Command
                    && qe.commandExecuted() instanceof org.apache.spark.sql.catalyst.plans.logical.CommandResult;
        } catch (Throwable t) {
            return false;
        }
    }

    /** Connect's classes, loaded only when a Connect event arrives. */
    private static final class Connect {
        static void started(SparkListenerEvent event, Map<String, Client> byJobTag) {
            var e = (org.apache.spark.sql.connect.service.SparkListenerConnectOperationStarted) event;
            String user = e.userName() != null && !e.userName().isEmpty() ? e.userName() : e.userId();
            String type = null;
            try {
                if (e.planRequest().isDefined()) type = e.planRequest().get().getClientType();
            } catch (Throwable t) {
                type = null;
            }
            byJobTag.put(e.jobTag(), new Client("connect", e.sessionId(), user, type == null || type.isEmpty() ? null : type));
        }
    }

    /** The Thrift server's classes, loaded only when a Thrift server event arrives. */
    private static final class Thrift {
        static void event(SparkListenerEvent event, Map<String, Client> byJobGroup, Map<String, String> address) {
            if (event instanceof org.apache.spark.sql.hive.thriftserver.ui.SparkListenerThriftServerSessionCreated s) {
                address.put(s.sessionId(), s.ip());
            } else if (event instanceof org.apache.spark.sql.hive.thriftserver.ui.SparkListenerThriftServerOperationStart o) {
                String ip = address.get(o.sessionId());
                byJobGroup.put(o.groupId(), new Client("thrift", o.sessionId(), o.userName(),
                        "jdbc" + (ip != null && !ip.isEmpty() ? " from " + ip : "")));
            }
        }
    }
}
