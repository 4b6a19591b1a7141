package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.catalog.FunctionResource;
import org.apache.spark.sql.catalyst.catalog.FunctionResourceType;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.runtime.AbstractPartialFunction;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * Persistent functions of an Ushas catalog as Spark's {@link UnboundFunction}s ({@code FunctionCatalog.loadFunction}).
 * A class function loads its class from its resources (a {@code USING JAR} is added to the session once, the
 * way Spark loads a Hive function's resources): a Spark {@code UnboundFunction} class is used as it is; any other
 * class (Hive UDF / GenericUDF) becomes Spark's own expression for it (the session's UDF expression builder),
 * evaluated per row. A SQL function's body is analyzed once per binding over its parameters (arguments cast
 * to the parameter types, the result to the RETURNS type, as Spark's SQL functions do) and evaluated per row.
 */
final class UshasFunctions {
    private UshasFunctions() {
    }

    /** resources already added to a session (by URI) */
    private static final Map<SparkSession, Set<String>> LOADED = Collections.synchronizedMap(new WeakHashMap<>());

    static UnboundFunction unbound(Identifier ident, String qualified, JsonNode f) {
        SparkSession session = SparkSession.active();
        String className = Json.text(f, "class_name");
        if (className != null && !className.isEmpty()) {
            loadResources(session, f.get("resources"));
            Class<?> clazz;
            try {
                clazz = Class.forName(className, true, Thread.currentThread().getContextClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                throw sparkError("CANNOT_LOAD_FUNCTION_CLASS", Map.of("className", className,
                        "functionName", quoted(qualified)));
            }
            if (UnboundFunction.class.isAssignableFrom(clazz)) {
                try {
                    return (UnboundFunction) clazz.getDeclaredConstructor().newInstance();
                } catch (ReflectiveOperationException e) {
                    throw sparkError("CANNOT_LOAD_FUNCTION_CLASS", Map.of("className", className,
                            "functionName", quoted(qualified)));
                }
            }
            return new ClassFunction(ident.name(), qualified, clazz);
        }
        if (f.path("table_function").asBoolean(false)) {
            throw Errors.invalidArgument("function " + qualified
                    + " is a table function (RETURNS TABLE): call it in FROM, not as a scalar function");
        }
        SqlFunction sql = new SqlFunction(ident.name(), qualified, Json.text(f, "parameters"),
                Json.text(f, "return_type"), Json.text(f, "body"),
                !f.path("deterministic").isBoolean() || f.path("deterministic").asBoolean());
        sql.version = Json.text(f, "id") + "@" + f.path("version").asLong();
        return sql;
    }

    /** CREATE FUNCTION of a SQL function: its parameters, return type and (scalar) body analyze, as Spark
     *  checks them when it creates one. */
    static void validateSql(String name, String qualified, JsonNode d) {
        SqlFunction f = new SqlFunction(name, qualified, Json.text(d, "parameters"), Json.text(d, "return_type"),
                Json.text(d, "body"), true);
        StructType params = f.params();
        if (d.path("table_function").asBoolean(false)) {
            String ret = Json.text(d, "return_type").trim().replaceFirst("(?i)^table\\s*", "");
            if (ret.startsWith("(") && ret.endsWith(")")) ret = ret.substring(1, ret.length() - 1);
            if (!ret.isBlank()) StructType.fromDDL(ret);
            return;
        }
        f.expression(SparkSession.active(), params, params.fields());
    }

    /** Add a function's resources to the session once (jars to its class loader and the executors). */
    static void loadResources(SparkSession session, JsonNode resources) {
        if (resources == null || resources.isEmpty()) return;
        Set<String> done = LOADED.computeIfAbsent(session, s -> Collections.synchronizedSet(new java.util.HashSet<>()));
        List<FunctionResource> todo = new ArrayList<>();
        for (JsonNode r : resources) {
            String uri = Json.text(r, "uri");
            if (done.contains(uri)) continue;
            todo.add(new FunctionResource(FunctionResourceType.fromString(Json.text(r, "type")), uri));
        }
        if (todo.isEmpty()) return;
        session.sessionState().catalog().loadFunctionResources(
                scala.jdk.javaapi.CollectionConverters.asScala(todo).toList());
        for (FunctionResource r : todo) done.add(r.uri());
    }

    /** Spark's own error class with its message parameters. */
    static RuntimeException sparkError(String errorClass, Map<String, String> parameters) {
        com.fasterxml.jackson.databind.node.ObjectNode spark = Json.object();
        spark.put("errorClass", errorClass);
        spark.set("parameters", Json.map(parameters));
        return Errors.withErrorClass(spark);
    }

    /** A dotted name as Spark's messages quote it: `a`.`b`.`c`. */
    static String quoted(String dotted) {
        StringBuilder b = new StringBuilder();
        for (String p : dotted.split("\\.")) {
            if (b.length() > 0) b.append('.');
            b.append('`').append(p.replace("`", "``")).append('`');
        }
        return b.toString();
    }

    private static scala.collection.immutable.Seq<Expression> seq(List<Expression> xs) {
        return scala.jdk.javaapi.CollectionConverters.asScala(xs).toList();
    }

    /** A Hive (or Spark UDAF-free) class function: Spark's own expression for the class over the arguments. */
    static final class ClassFunction implements UnboundFunction {
        private final String name;
        private final String qualified;
        private final Class<?> clazz;

        ClassFunction(String name, String qualified, Class<?> clazz) {
            this.name = name;
            this.qualified = qualified;
            this.clazz = clazz;
        }

        @Override
        public BoundFunction bind(StructType inputType) {
            List<Expression> args = new ArrayList<>();
            StructField[] fields = inputType.fields();
            for (int i = 0; i < fields.length; i++) args.add(new BoundReference(i, fields[i].dataType(), true));
            Expression e = builder().makeExpression(qualified, clazz, seq(args));
            if (e instanceof org.apache.spark.sql.catalyst.expressions.Generator) {
                throw Errors.invalidArgument("function " + qualified + " (" + clazz.getName() + ") is a table "
                        + "generating function (UDTF): Spark 4.3 calls only scalar and aggregate functions of a "
                        + "catalog other than spark_catalog");
            }
            if (e instanceof AggregateFunction || e.getClass().getSimpleName().contains("UDAF")) {
                throw Errors.invalidArgument("function " + qualified + " (" + clazz.getName()
                        + ") is an aggregate function: aggregate functions of a catalog other than spark_catalog"
                        + " must be Spark AggregateFunction classes (UnboundFunction)");
            }
            return new EvalFunction(name, qualified, fields, e, e.deterministic());
        }

        @Override
        public String description() {
            return qualified + ": " + clazz.getName();
        }

        @Override
        public String name() {
            return name;
        }
    }

    private static org.apache.spark.sql.internal.SparkUDFExpressionBuilder builder() {
        try {
            return (org.apache.spark.sql.internal.SparkUDFExpressionBuilder)
                    Class.forName("org.apache.spark.sql.hive.HiveUDFExpressionBuilder$").getField("MODULE$").get(null);
        } catch (ReflectiveOperationException | LinkageError e) {
            return new org.apache.spark.sql.internal.SparkUDFExpressionBuilder();
        }
    }

    /** Bound SQL functions by (function id @ version, argument types, ANSI mode): a resolution of a function
     *  already bound costs its {@code loadFunction} round trip only, not a new analysis of its body. */
    private static final Map<String, EvalFunction> BOUND = Collections.synchronizedMap(
            new java.util.LinkedHashMap<>(64, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, EvalFunction> eldest) {
                    return size() > 512;
                }
            });

    /** A SQL function: {@code CREATE FUNCTION f(x INT) RETURNS INT RETURN x + 1}. */
    static final class SqlFunction implements UnboundFunction {
        /** the stored function's id and version (null: not stored yet, never cached) */
        String version;
        private final String name;
        private final String qualified;
        private final String parameters;
        private final String returnType;
        private final String body;
        private final boolean deterministic;

        SqlFunction(String name, String qualified, String parameters, String returnType, String body,
                    boolean deterministic) {
            this.name = name;
            this.qualified = qualified;
            this.parameters = parameters == null ? "" : parameters;
            this.returnType = returnType;
            this.body = body;
            this.deterministic = deterministic;
        }

        StructType params() {
            return parameters.isBlank() ? new StructType() : StructType.fromDDL(parameters);
        }

        @Override
        public BoundFunction bind(StructType inputType) {
            StructType params = params();
            StructField[] args = inputType.fields();
            if (args.length != params.fields().length) {
                throw sparkError("WRONG_NUM_ARGS.WITHOUT_SUGGESTION", Map.of(
                        "functionName", quoted(qualified), "expectedNum", String.valueOf(params.fields().length),
                        "actualNum", String.valueOf(args.length), "docroot", "https://spark.apache.org/docs/latest"));
            }
            String key = version == null ? null : version + "|" + inputType.json() + "|"
                    + org.apache.spark.sql.internal.SQLConf.get().ansiEnabled();
            EvalFunction bound = key == null ? null : BOUND.get(key);
            if (bound == null) {
                bound = new EvalFunction(name, qualified, args, expression(SparkSession.active(), params, args),
                        deterministic);
                if (key != null) BOUND.put(key, bound);
            }
            return bound;
        }

        /** The body over the arguments: analyzed as {@code SELECT CAST((body) AS returns) FROM (SELECT CAST(arg_i
         *  AS param_i) AS name_i)}, then the parameters replaced by the casts of the bound arguments. */
        Expression expression(SparkSession session, StructType params, StructField[] args) {
            StructField[] argFields = new StructField[args.length];
            Column[] casts = new Column[args.length];
            for (int i = 0; i < args.length; i++) {
                argFields[i] = new StructField("__ushas_arg" + i, args[i].dataType(), true,
                        org.apache.spark.sql.types.Metadata.empty());
                casts[i] = functions.col("__ushas_arg" + i).cast(params.fields()[i].dataType()).as(params.fields()[i].name());
            }
            Dataset<Row> base = session.createDataFrame(new ArrayList<Row>(), new StructType(argFields));
            Dataset<Row> inner = base.select(casts);
            Dataset<Row> outer = inner.selectExpr("CAST((" + body + ") AS " + returnType + ") AS result");
            LogicalPlan plan = outer.queryExecution().analyzed();
            Project top = (Project) plan;
            Project params2 = (Project) top.child();
            Map<ExprId, Expression> byParam = new HashMap<>();
            for (NamedExpression ne : scala.jdk.javaapi.CollectionConverters.asJava(params2.projectList())) {
                byParam.put(ne.exprId(), ((Alias) ne).child());
            }
            List<AttributeReference> argAttrs = new ArrayList<>();
            for (var a : scala.jdk.javaapi.CollectionConverters.asJava(params2.child().output())) {
                argAttrs.add((AttributeReference) a);
            }
            Expression e = ((Alias) top.projectList().head()).child();
            e = e.transform(new AbstractPartialFunction<Expression, Expression>() {
                @Override
                public boolean isDefinedAt(Expression x) {
                    return x instanceof AttributeReference a && byParam.containsKey(a.exprId());
                }

                @Override
                public Expression apply(Expression x) {
                    return byParam.get(((AttributeReference) x).exprId());
                }
            });
            return e.transform(new AbstractPartialFunction<Expression, Expression>() {
                @Override
                public boolean isDefinedAt(Expression x) {
                    return x instanceof AttributeReference;
                }

                @Override
                public Expression apply(Expression x) {
                    AttributeReference a = (AttributeReference) x;
                    for (int i = 0; i < argAttrs.size(); i++) {
                        if (argAttrs.get(i).exprId().equals(a.exprId())) return new BoundReference(i, a.dataType(), true);
                    }
                    throw Errors.invalidArgument("function " + qualified + ": the body refers to "
                            + a.name() + ", which is not one of its parameters");
                }
            });
        }

        @Override
        public String description() {
            return qualified + "(" + parameters + ") RETURNS " + returnType + " RETURN " + body;
        }

        @Override
        public String name() {
            return name;
        }
    }

    /** A bound function that evaluates a Catalyst expression over its argument row. */
    static final class EvalFunction implements ScalarFunction<Object> {
        private final String name;
        private final String qualified;
        private final DataType[] inputs;
        private final Expression expression;
        private final boolean deterministic;

        EvalFunction(String name, String qualified, StructField[] args, Expression expression, boolean deterministic) {
            this.name = name;
            this.qualified = qualified;
            this.inputs = new DataType[args.length];
            for (int i = 0; i < args.length; i++) inputs[i] = args[i].dataType();
            this.expression = expression;
            this.deterministic = deterministic;
        }

        @Override
        public Object produceResult(InternalRow input) {
            return expression.eval(input);
        }

        @Override
        public DataType[] inputTypes() {
            return inputs;
        }

        @Override
        public DataType resultType() {
            return expression.dataType();
        }

        @Override
        public boolean isResultNullable() {
            return expression.nullable();
        }

        @Override
        public boolean isDeterministic() {
            return deterministic;
        }

        @Override
        public String canonicalName() {
            return qualified;
        }

        @Override
        public String name() {
            return name;
        }
    }
}
