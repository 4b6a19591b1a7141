package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.QueryContext;
import org.apache.spark.SparkRuntimeException;
import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NoSuchViewException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.ViewAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Identifier;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Turns a typed Python error into the Spark exception a Spark user expects: the exception class of each
 * type is {@code ushas_catalog.errors.SPARK_EXCEPTION}, shipped in the jar as {@code errors.json}. Spark's own exceptions
 * carry Spark's error classes (TABLE_OR_VIEW_NOT_FOUND, SCHEMA_NOT_FOUND, ...). An error with a
 * {@code spark} object ({@code errorClass}, {@code parameters}, {@code runtime}: see
 * {@code ushas_catalog.errors.SparkError}) becomes Spark's exception of that error class.
 */
final class Errors {
    private Errors() {}

    /** SQLSTATE of the catalog's refusals of bad input ("syntax error or access rule violation"). */
    static final String USER_SQL_STATE = "42000";
    /** SQLSTATE of bridge and store failures ("system error"). */
    static final String SYSTEM_SQL_STATE = "58000";

    /** The error table, type -> exception class, generated from {@code ushas_catalog.errors} into the jar
     * ({@code errors.json}, next to this class) when the jar is built: the one copy of the mapping. */
    private static final Map<String, String> TABLE = loadTable();
    private static final String PKG = "org.apache.spark.sql.catalyst.analysis.";

    private static Map<String, String> loadTable() {
        try (java.io.InputStream in = Errors.class.getResourceAsStream("errors.json")) {
            if (in == null) throw new IllegalStateException("the shim jar has no io/ushas/spark/errors.json");
            return Json.toMap(Json.MAPPER.readTree(in).get("errors"));
        } catch (java.io.IOException e) {
            throw new IllegalStateException("the shim jar's errors.json cannot be read: " + e, e);
        }
    }

    /** The exception class the error table names for a Python error type (the shim's system error for a
     * type it does not name). */
    static String exceptionOf(String type) {
        String name = type == null ? null : TABLE.get(type);
        return name != null ? name : UshasBridgeException.class.getName();
    }

    /** Thrown for an error answer; unchecked so it passes through any Spark interface method. The exception
     * class comes from the error table; this method only knows how to build each class. */
    static RuntimeException toSpark(JsonNode error, Identifier ident, String[] namespace) {
        String type = Json.text(error, "type");
        String message = Json.text(error, "message");
        String[] ns = namespace != null ? namespace : ident != null ? ident.namespace() : new String[0];
        String exception = exceptionOf(type);
        if (Json.text(error, "errorClass") != null) return ownErrorClass(error, message);
        JsonNode spark = error.get("spark");
        if (spark != null && spark.isObject() && Json.text(spark, "errorClass") != null) {
            return exception.startsWith(PKG) ? withErrorClass(exception, spark) : withErrorClass(spark);
        }
        return switch (exception.startsWith(PKG) ? exception.substring(PKG.length()) : exception) {
            case "NoSuchTableException" -> sneak(ident != null ? new NoSuchTableException(ident)
                    : new NoSuchTableException(String.join(".", ns), message));
            case "NoSuchViewException" -> sneak(ident != null ? new NoSuchViewException(ident)
                    : new NoSuchTableException(String.join(".", ns), message));
            case "NoSuchNamespaceException" -> sneak(new NoSuchNamespaceException(ns));
            case "NamespaceAlreadyExistsException" -> sneak(new NamespaceAlreadyExistsException(ns));
            case "TableAlreadyExistsException" -> sneak(ident != null ? new TableAlreadyExistsException(ident)
                    : new TableAlreadyExistsException(message));
            case "ViewAlreadyExistsException" -> sneak(ident != null ? new ViewAlreadyExistsException(ident)
                    : new TableAlreadyExistsException(message));
            case "NonEmptyNamespaceException" -> sneak(new NonEmptyNamespaceException(ns));
            case "org.apache.spark.sql.AnalysisException" -> sneak(analysis("USHAS_" + type, message));
            default -> new UshasBridgeException("USHAS_" + type, "[USHAS_" + type + "] " + message);
        };
    }

    /** Spark's exception {@code className} (an AnalysisException with an (errorClass, parameters) constructor,
     * e.g. NoSuchPartitionsException) of the error class and parameters Python named. */
    static RuntimeException withErrorClass(String className, JsonNode spark) {
        try {
            Object e = Class.forName(className).getConstructor(String.class, scala.collection.immutable.Map.class)
                    .newInstance(Json.text(spark, "errorClass"), parameters(spark));
            return sneak((Throwable) e);
        } catch (ReflectiveOperationException | ClassCastException e) {
            return withErrorClass(spark);  // a Spark without that constructor: the error class still reaches it
        }
    }

    private static scala.collection.immutable.Map<String, String> parameters(JsonNode spark) {
        Map<String, String> params = new LinkedHashMap<>();
        JsonNode p = spark.get("parameters");
        if (p != null) p.fields().forEachRemaining(e -> params.put(e.getKey(), e.getValue().asText()));
        return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(params));
    }

    /** Spark's exception of the error class Python named, with its message parameters. */
    static RuntimeException withErrorClass(JsonNode spark) {
        String errorClass = Json.text(spark, "errorClass");
        scala.collection.immutable.Map<String, String> scalaParams = parameters(spark);
        JsonNode runtime = spark.get("runtime");
        if (runtime != null && runtime.asBoolean()) {
            return new SparkRuntimeException(errorClass, scalaParams, null, new QueryContext[0], "");
        }
        return sneak(new AnalysisException(errorClass, scalaParams));
    }

    /** An {@link AnalysisException} of the catalog's own error class {@code errorClass} (its message is
     * the catalog's, not a template of Spark's), so Spark's tools print it once like their own. */
    static AnalysisException analysis(String errorClass, String message) {
        return analysis(errorClass, message, null);
    }

    static AnalysisException analysis(String errorClass, String message, Throwable cause) {
        return analysis(errorClass, message, cause, USER_SQL_STATE);
    }

    static AnalysisException analysis(String errorClass, String message, Throwable cause, String sqlState) {
        return new AnalysisException("[" + errorClass + "] " + message, Option.empty(), Option.empty(),
                Option.apply(cause), Option.apply(errorClass), scala.collection.immutable.Map$.MODULE$.empty(),
                new QueryContext[0], Option.apply(sqlState), Option.empty());
    }

    /** Thrown (unchecked) for bad input the shim itself refuses: {@code [USHAS_InvalidArgument] message}. */
    static RuntimeException invalidArgument(String message) {
        return sneak(analysis("USHAS_InvalidArgument", message));
    }

    static RuntimeException invalidArgument(String message, Throwable cause) {
        return sneak(analysis("USHAS_InvalidArgument", message, cause));
    }

    /** Rethrows a checked Spark exception without declaring it (Spark declares them on the interface). */
    static RuntimeException sneak(Throwable t) {
        Errors.<RuntimeException>throwAs(t);
        return new IllegalStateException("unreachable");
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void throwAs(Throwable t) throws T {
        throw (T) t;
    }

    /** Failures of the bridge itself (Python missing, crashed, hanging) and of the store: a
     * {@link SparkThrowable} of error class {@code USHAS_BRIDGE} (or the store's {@code USHAS_<type>}), so
     * spark-sql / spark-submit print its message once instead of wrapping it with its stack. It is a
     * {@link SparkRuntimeException} so that PySpark, which converts only the JVM exception classes it
     * knows, raises it as {@code pyspark.errors.SparkRuntimeException} with this message, not as a
     * {@code Py4JJavaError} carrying the Java stack. (The superclass is built from Spark's registered
     * {@code USER_RAISED_EXCEPTION} template; message, error class and state are this class's own.) */
    static final class UshasBridgeException extends SparkRuntimeException {
        private final String errorClass;
        private final String message;

        UshasBridgeException(String message) {
            this("USHAS_BRIDGE", message, null);
        }

        UshasBridgeException(String message, Throwable cause) {
            this("USHAS_BRIDGE", message, cause);
        }

        UshasBridgeException(String errorClass, String message) {
            this(errorClass, message, null);
        }

        private UshasBridgeException(String errorClass, String message, Throwable cause) {
            super("USER_RAISED_EXCEPTION", scala.collection.immutable.Map$.MODULE$.<String, String>empty()
                    .updated("errorMessage", message == null ? "" : message), cause, new QueryContext[0], "");
            this.errorClass = errorClass;
            this.message = message;
        }

        @Override
        public String getMessage() {
            return message;
        }

        @Override
        public String getCondition() {
            return errorClass;
        }

        @Override
        @SuppressWarnings("deprecation")
        public String getErrorClass() {
            return errorClass;
        }

        @Override
        public java.util.Map<String, String> getMessageParameters() {
            return java.util.Map.of();
        }

        /** A system error's state (not Spark's internal-error "XX", for which spark-sql prints the stack). */
        @Override
        public String getSqlState() {
            return SYSTEM_SQL_STATE;
        }

        @Override
        public boolean isInternalError() {
            return false;
        }
    }

    /** An error Python names its own error class and SQLSTATE for (a refused privilege:
     * {@code [INSUFFICIENT_PERMISSIONS] ...}, 42501): an AnalysisException of that class. */
    static RuntimeException ownErrorClass(JsonNode error, String message) {
        String errorClass = Json.text(error, "errorClass");
        String state = Json.text(error, "sqlState");
        return sneak(new AnalysisException("[" + errorClass + "] " + message, Option.empty(), Option.empty(),
                Option.empty(), Option.apply(errorClass), scala.collection.immutable.Map$.MODULE$.empty(),
                new QueryContext[0], Option.apply(state != null ? state : USER_SQL_STATE), Option.empty()));
    }
}
