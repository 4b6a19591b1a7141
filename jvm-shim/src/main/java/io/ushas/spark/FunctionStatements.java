package io.ushas.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.analysis.CurrentNamespace$;
import org.apache.spark.sql.catalyst.analysis.UnresolvedFunctionName;
import org.apache.spark.sql.catalyst.analysis.UnresolvedIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedNamespace;
import org.apache.spark.sql.catalyst.catalog.FunctionResource;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.CreateFunction;
import org.apache.spark.sql.catalyst.plans.logical.CreateUserDefinedFunction;
import org.apache.spark.sql.catalyst.plans.logical.DescribeFunction;
import org.apache.spark.sql.catalyst.plans.logical.DropFunction;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.RefreshFunction;
import org.apache.spark.sql.catalyst.plans.logical.ShowFunctions;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Routes the function statements of an Ushas catalog to {@link UshasFunctionCommand} (a rule of the "Hints"
 * batch of {@link UshasExtensions}, so it runs before Spark's {@code ResolveSessionCatalog}, which refuses
 * them for any catalog but the session catalog). Names resolve as Spark resolves them: a first part that is a
 * registered catalog names the catalog, otherwise the current catalog and, for one part, its current
 * namespace; a one-part name of a builtin or temporary function, and names under {@code system} /
 * {@code builtin} / {@code session}, stay Spark's. {@code CREATE TEMPORARY FUNCTION} never reaches here
 * (Spark parses it to its own command).
 */
final class FunctionStatements extends Rule<LogicalPlan> {
    private final SparkSession session;

    FunctionStatements(SparkSession session) {
        this.session = session;
    }

    static AbstractFunction1<SparkSession, Rule<LogicalPlan>> factory() {
        return new AbstractFunction1<>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession s) {
                return new FunctionStatements(s);
            }
        };
    }

    /** A resolved target: the catalog, the namespace, the function name (null for SHOW). */
    private record Target(UshasCatalog catalog, String[] namespace, String name) {
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return plan.resolveOperators(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan p) {
                return rewrite(p) != null;
            }

            @Override
            public LogicalPlan apply(LogicalPlan p) {
                return rewrite(p);
            }
        });
    }

    private LogicalPlan rewrite(LogicalPlan p) {
        Seq<Attribute> none = scala.collection.immutable.List$.MODULE$.empty();
        if (p instanceof CreateFunction c && c.child() instanceof UnresolvedIdentifier u) {
            Target t = target(parts(u.nameParts()), false);
            if (t == null) return null;
            ObjectNode r = Json.object().put("replace", c.replace()).put("if_not_exists", c.ifExists());
            ObjectNode d = r.putObject("definition").put("class_name", c.className());
            ArrayNode res = d.putArray("resources");
            for (FunctionResource fr : scala.jdk.javaapi.CollectionConverters.asJava(c.resources())) {
                res.addObject().put("type", fr.resourceType().resourceType()).put("uri", fr.uri());
            }
            return command(t, "create", r, none);
        }
        if (p instanceof CreateUserDefinedFunction c && c.child() instanceof UnresolvedIdentifier u) {
            Target t = target(parts(u.nameParts()), false);
            if (t == null) return null;
            ObjectNode r = Json.object().put("replace", c.replace()).put("if_not_exists", c.ignoreIfExists());
            ObjectNode d = r.putObject("definition");
            d.put("parameters", c.inputParamText().isDefined() ? c.inputParamText().get() : "");
            d.put("return_type", c.returnTypeText());
            d.put("body", c.exprText().isDefined() ? c.exprText().get()
                    : c.queryText().isDefined() ? c.queryText().get() : "");
            d.put("table_function", c.isTableFunc());
            if (c.comment().isDefined()) d.put("comment", c.comment().get());
            if (c.isDeterministic().isDefined()) d.put("deterministic", (Boolean) c.isDeterministic().get());
            d.put("language", c.language().toString());
            return command(t, "create", r, none);
        }
        if (p instanceof DropFunction d && nameOf(d.child()) != null) {
            Target t = target(nameOf(d.child()), true);
            return t == null ? null : command(t, "drop", Json.object().put("if_exists", d.ifExists()), none);
        }
        if (p instanceof RefreshFunction f && nameOf(f.child()) != null) {
            Target t = target(nameOf(f.child()), true);
            return t == null ? null : command(t, "refresh", Json.object(), none);
        }
        if (p instanceof DescribeFunction f && nameOf(f.child()) != null) {
            Target t = target(nameOf(f.child()), true);
            return t == null ? null : command(t, "describe", Json.object().put("extended", f.isExtended()),
                    describeOutput());
        }
        if (p instanceof org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction f) {
            String[] name = parts(f.name());
            if (name.length == 1 && sparkTableFunction(name[0])) return null;
            Target t = target(name, true);
            return t == null ? null : tableFunction(t, scala.jdk.javaapi.CollectionConverters.asJava(f.functionArgs()));
        }
        if (p instanceof ShowFunctions s) {
            String[] ns;
            if (s.child() instanceof UnresolvedNamespace u) {
                ns = parts(u.multipartIdentifier());
            } else if (s.child() == CurrentNamespace$.MODULE$) {
                ns = new String[0];
            } else {
                return null;
            }
            Target t = namespaceTarget(ns);
            if (t == null) return null;
            ObjectNode r = Json.object().put("user", s.userScope()).put("system", s.systemScope());
            if (s.pattern().isDefined()) r.put("pattern", s.pattern().get());
            return command(t, "show", r, s.output());
        }
        return null;
    }

    /** A builtin or temporary table function of that name (Spark 4.3's registries take 3-part names). */
    private boolean sparkTableFunction(String name) {
        try {
            var registry = session.sessionState().tableFunctionRegistry();
            return registry.functionExists(new FunctionIdentifier(name, scala.Option.apply("builtin"),
                    scala.Option.apply("system")))
                    || registry.functionExists(new FunctionIdentifier(name, scala.Option.apply("session"),
                    scala.Option.apply("system")));
        } catch (RuntimeException | AssertionError e) {
            return true;  // when in doubt, the name is Spark's
        }
    }

    /**
     * A call of a SQL table function ({@code RETURNS TABLE}) in FROM: Spark 4.3 resolves table-valued functions
     * only in the session catalog ({@code MISSING_CATALOG_ABILITY.TABLE_VALUED_FUNCTIONS} for any other), so
     * the call becomes its body, as Spark inlines its own SQL table functions: the arguments cast to the
     * parameters' types in a one-row relation, the body a LATERAL subquery over it (parameters are its outer
     * references), its columns cast to and named as the RETURNS TABLE columns.
     */
    private LogicalPlan tableFunction(Target t, List<org.apache.spark.sql.catalyst.expressions.Expression> args) {
        String qualified = t.catalog().name() + "." + String.join(".", t.namespace()) + "." + t.name();
        com.fasterxml.jackson.databind.JsonNode f;
        try {
            f = t.catalog().functionCall("load_function", t.namespace(), t.name(), Json.object()).get("function");
        } catch (Exception e) {  // Spark's checked NoSuchFunctionException arrives sneaked
            if (!(e instanceof org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException)) throw Errors.sneak(e);
            throw UshasFunctions.sparkError("UNRESOLVABLE_TABLE_VALUED_FUNCTION", java.util.Map.of(
                    "name", UshasFunctions.quoted(qualified)));
        }
        if (!f.path("table_function").asBoolean(false)) {
            throw Errors.invalidArgument("function " + qualified + " is not a table function (RETURNS TABLE): "
                    + "call it in an expression, not in FROM");
        }
        String paramText = Json.text(f, "parameters");
        org.apache.spark.sql.types.StructType params = paramText == null || paramText.isBlank()
                ? new org.apache.spark.sql.types.StructType()
                : org.apache.spark.sql.types.StructType.fromDDL(paramText);
        if (params.fields().length != args.size()) {
            throw UshasFunctions.sparkError("WRONG_NUM_ARGS.WITHOUT_SUGGESTION", java.util.Map.of(
                    "functionName", UshasFunctions.quoted(qualified),
                    "expectedNum", String.valueOf(params.fields().length), "actualNum", String.valueOf(args.size()),
                    "docroot", "https://spark.apache.org/docs/latest"));
        }
        String ret = Json.text(f, "return_type").trim().replaceFirst("(?i)^table\\s*", "").trim();
        if (ret.startsWith("(") && ret.endsWith(")")) ret = ret.substring(1, ret.length() - 1);
        org.apache.spark.sql.types.StructType returns = org.apache.spark.sql.types.StructType.fromDDL(ret);
        StringBuilder in = new StringBuilder("SELECT ");
        for (int i = 0; i < args.size(); i++) {
            var p = params.fields()[i];
            in.append(i == 0 ? "" : ", ").append("CAST((").append(args.get(i).sql()).append(") AS ")
                    .append(p.dataType().sql()).append(") AS ").append(ident(p.name()));
        }
        if (args.isEmpty()) in.append("1 AS __ushas_no_parameters");
        StringBuilder cols = new StringBuilder();
        StringBuilder out = new StringBuilder("SELECT ");
        for (int i = 0; i < returns.fields().length; i++) {
            var c = returns.fields()[i];
            cols.append(i == 0 ? "" : ", ").append("__c").append(i);
            out.append(i == 0 ? "" : ", ").append("CAST(__ushas_body.__c").append(i).append(" AS ")
                    .append(c.dataType().sql()).append(") AS ").append(ident(c.name()));
        }
        out.append(" FROM (").append(in).append(") AS __ushas_parameters, LATERAL (")
                .append(Json.text(f, "body")).append(") AS __ushas_body(").append(cols).append(")");
        try {
            return session.sessionState().sqlParser().parsePlan(out.toString());
        } catch (Exception e) {  // the stored body no longer parses (Spark checked it when it was created)
            throw Errors.sneak(e);
        }
    }

    private static String ident(String name) {
        return "`" + name.replace("`", "``") + "`";
    }

    /** DESCRIBE FUNCTION's output column, {@code function_desc} (Spark's {@code DescribeFunctionCommand}). */
    @SuppressWarnings("unchecked")
    private static Seq<Attribute> describeOutput() {
        return (Seq<Attribute>) (Seq<?>) org.apache.spark.sql.catalyst.types.DataTypeUtils$.MODULE$.toAttributes(
                new org.apache.spark.sql.types.StructType().add("function_desc",
                        org.apache.spark.sql.types.DataTypes.StringType, false));
    }

    /** The name parts of a function statement's target (Spark 4.3 parses DROP FUNCTION's as an identifier). */
    private static String[] nameOf(LogicalPlan child) {
        if (child instanceof UnresolvedFunctionName u) return parts(u.multipartIdentifier());
        if (child instanceof UnresolvedIdentifier u) return parts(u.nameParts());
        return null;
    }

    private static UshasFunctionCommand command(Target t, String kind, ObjectNode request, Seq<Attribute> output) {
        return new UshasFunctionCommand(t.catalog(), kind, t.namespace(), t.name(), request.toString(), output);
    }

    private static String[] parts(Seq<String> seq) {
        return scala.jdk.javaapi.CollectionConverters.asJava(seq).toArray(new String[0]);
    }

    private static final List<String> SPARK_OWN = List.of("system", "builtin", "session");

    private Target target(String[] parts, boolean existing) {
        if (parts.length == 0 || SPARK_OWN.contains(parts[0].toLowerCase(Locale.ROOT))) return null;
        CatalogManager cm = session.sessionState().catalogManager();
        if (parts.length == 1 && existing) {
            var sc = session.sessionState().catalog();
            if (sc.isTemporaryFunction(FunctionIdentifier.apply(parts[0])) || sc.isBuiltinFunction(parts[0])) {
                return null;
            }
        }
        CatalogPlugin c;
        String[] rest;
        if (parts.length > 1 && cm.isCatalogRegistered(parts[0])) {
            c = cm.catalog(parts[0]);
            rest = Arrays.copyOfRange(parts, 1, parts.length);
        } else {
            c = cm.currentCatalog();
            rest = parts;
        }
        if (!(c instanceof UshasCatalog u)) return null;
        String[] ns = rest.length == 1 ? (c == cm.currentCatalog() ? cm.currentNamespace() : u.defaultNamespace())
                : Arrays.copyOfRange(rest, 0, rest.length - 1);
        return new Target(u, ns, rest[rest.length - 1]);
    }

    private Target namespaceTarget(String[] parts) {
        CatalogManager cm = session.sessionState().catalogManager();
        CatalogPlugin c;
        String[] ns;
        if (parts.length == 0) {
            c = cm.currentCatalog();
            ns = cm.currentNamespace();
        } else if (cm.isCatalogRegistered(parts[0])) {
            c = cm.catalog(parts[0]);
            ns = Arrays.copyOfRange(parts, 1, parts.length);
        } else {
            c = cm.currentCatalog();
            ns = parts;
        }
        if (!(c instanceof UshasCatalog u)) return null;
        return new Target(u, ns.length == 0 ? u.defaultNamespace() : ns, null);
    }
}
