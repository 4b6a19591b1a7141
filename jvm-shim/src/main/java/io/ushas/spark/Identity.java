package io.ushas.spark;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Who calls, for a catalog instance (docs/governance.md, "Identity"): adaptation only, Python decides what
 * to do with it. In order: the catalog's {@code user} option (what a deployer configures); the Spark
 * Connect session's user (the job tag Connect puts on the operation's thread:
 * {@code SparkConnect_OperationTag_User_<user>_Session_<uuid>_Operation_<id>}); the Thrift server session's
 * user (Hive's thread-local session user, when the server's classes are there); else Spark's user
 * ({@code sparkUser}: SPARK_USER or the login user). Each Connect and Thrift session has its own catalog
 * instances, initialized on that session's thread, so one answer per instance is right.
 */
final class Identity {
    private Identity() {}

    /** The context field saying whether the catalog's calls are checked (the catalog's own setting, not an
     * answer of Python's). */
    static final String AUTHORIZATION = "authorization";

    /** The context field of a configured user (the lineage listener's target catalog's {@code .user}). */
    static final String USER = "user";

    private static final Pattern CONNECT_TAG =
            Pattern.compile("^SparkConnect_OperationTag_User_(.*)_Session_[0-9a-fA-F-]{36}_Operation_.*$");

    /** Adds {@code user}, {@code user_source} and {@code authorization} to a catalog's request context. */
    static void describe(ObjectNode context, CaseInsensitiveStringMap options, SparkSession session) {
        String user = options.get("user");
        String source = "configured";
        if (blank(user)) {
            user = connectUser(session);
            source = "connect";
        }
        if (blank(user)) {
            user = thriftUser();
            source = "thrift";
        }
        if (blank(user)) {
            user = session.sparkContext().sparkUser();
            source = "spark";
        }
        context.put("user", user);
        context.put("user_source", source);
        context.put(AUTHORIZATION, Boolean.parseBoolean(options.getOrDefault("authorization", "false").trim()));
    }

    /** A lineage run's user: the lineage catalog's configured {@code .user} when the deployer set one (it
     * replaces Spark's and a client's self-declared user, as for the catalog's calls). */
    static void configured(ObjectNode action, ObjectNode listenerContext) {
        String user = listenerContext == null ? null : Json.text(listenerContext, USER);
        if (!blank(user)) action.put(USER, user);
    }

    /** Whether a catalog with this request context has authorization on. */
    static boolean checked(ObjectNode context) {
        return context.path(AUTHORIZATION).asBoolean(false);
    }

    static String connectUser(SparkSession session) {
        try {
            var tags = session.sparkContext().getJobTags().iterator();
            while (tags.hasNext()) {
                Matcher m = CONNECT_TAG.matcher(tags.next());
                if (m.matches()) return m.group(1);
            }
        } catch (Throwable t) {
            return null;
        }
        return null;
    }

    /** The Thrift server session's user: Hive's thread-local session user, if the server's classes are
     * loaded (reflection: a Spark without the Thrift server works). */
    static String thriftUser() {
        try {
            Class<?> c = Class.forName("org.apache.hive.service.cli.session.SessionManager");
            Object name = c.getMethod("getUserName").invoke(null);
            return name == null ? null : name.toString();
        } catch (Throwable t) {
            return null;
        }
    }

    private static boolean blank(String s) {
        return s == null || s.isBlank();
    }
}
