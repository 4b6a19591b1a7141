package io.ushas.spark;

import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.connector.catalog.Identifier;

/** Test-only: the exception {@link Errors} throws for a bridge error answer, seen from Python. */
public final class ErrorsProbe {
    private ErrorsProbe() {}

    /**
     * The exception the shim throws for {@code errorJson} (a bridge error answer) on table {@code ns.name}
     * ({@code name} null: on namespace {@code ns}), as three lines: its class, its error condition (or
     * "null"), its message.
     */
    public static String thrown(String errorJson, String ns, String name) {
        String[] namespace = ns.isEmpty() ? new String[0] : ns.split("\\.");
        Identifier ident = name == null ? null : Identifier.of(namespace, name);
        Throwable t;
        try {
            t = Errors.toSpark(Json.parse(errorJson), ident, name == null ? namespace : null);
        } catch (Throwable thrown) {  // Errors.sneak throws Spark's checked exceptions itself
            t = thrown;
        }
        String condition = t instanceof SparkThrowable s ? s.getCondition() : null;
        return t.getClass().getName() + "\n" + condition + "\n" + t.getMessage();
    }

    /** Whether class {@code name} is {@code expected} or a subclass of it (loaded by the shim's class loader). */
    public static boolean isA(String name, String expected) throws ClassNotFoundException {
        ClassLoader loader = ErrorsProbe.class.getClassLoader();
        return Class.forName(expected, false, loader).isAssignableFrom(Class.forName(name, false, loader));
    }

    /** The Errors table as loaded from the jar: the exception class of a Python error type. */
    public static String exceptionOf(String type) {
        return Errors.exceptionOf(type);
    }
}
