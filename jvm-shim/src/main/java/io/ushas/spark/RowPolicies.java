package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.UnresolvedFunction;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.CurrentUser;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.streaming.runtime.StreamingRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;
import scala.jdk.javaapi.CollectionConverters;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Row filters and column masks (docs/governance.md), a resolution rule of {@link UshasExtensions}. The
 * relation of a catalog table whose load answered a {@code policy} (the filter and masks that apply to
 * this catalog's user: Python leaves out those whose exempt principal the user holds) becomes
 * {@code Project(masks, Filter(rowFilter, relation))} in the analyzed plan, wherever it appears (queries,
 * DataFrames, views, subqueries, both sides of a join). {@code current_user()} and
 * {@code is_member('role:x')} become literals of the user and principals Python answered, so a plan is
 * fixed for its user. A masked column is a new attribute of the column's name and type (the mask is cast
 * to it): the rule runs in the same analyzer pass as Spark's {@code FindDataSourceTable}, which makes the
 * relation, before the query above it is resolved (were it resolved already against the raw column, the
 * plan would fail analysis: never read the raw value). The rewritten relation's file index is
 * marked: the index refuses to list files for a relation that carries a policy and was not rewritten (a
 * session without the extension), so a policy is never silently skipped (fail closed).
 */
final class RowPolicies extends Rule<LogicalPlan> {
    private final SparkSession session;

    RowPolicies(SparkSession session) {
        this.session = session;
    }

    static AbstractFunction1<SparkSession, Rule<LogicalPlan>> factory() {
        return new AbstractFunction1<>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession s) {
                return new RowPolicies(s);
            }
        };
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan p) {
                UshasFileIndex index = indexOf(p);
                return (index != null && index.policy() != null && !index.policyApplied()) || unmarkedStream(p);
            }

            @Override
            public LogicalPlan apply(LogicalPlan p) {
                return p instanceof StreamingRelation s ? wrapStream(s) : wrap((LogicalRelation) p);
            }
        });
    }

    /** The secret of this JVM a stream's relation carries once this rule applied the table's policy to it
     *  ({@link UshasSource#createSource} refuses a policy table's stream without it). */
    static final String STREAM_MARK = "ushas.policyApplied";
    private static final String SECRET = java.util.UUID.randomUUID().toString();

    static boolean streamMarked(scala.collection.immutable.Map<String, String> options) {
        Option<String> v = options.get(STREAM_MARK);
        return v.isDefined() && v.get().equals(SECRET);
    }

    private static boolean unmarkedStream(LogicalPlan p) {
        return p instanceof StreamingRelation s && s.dataSource().className().equals(UshasSource.class.getName())
                && !streamMarked(s.dataSource().options());
    }

    /** A stream of a catalog table ({@code readStream.table}) in the table's filter and masks, as a read. */
    private LogicalPlan wrapStream(StreamingRelation s) {
        DataSource ds = s.dataSource();
        scala.collection.immutable.Map<String, String> options = ds.options();
        org.apache.spark.sql.connector.catalog.CatalogPlugin plugin =
                session.sessionState().catalogManager().catalog(options.apply(UshasSource.CATALOG));
        Identifier ident = Identifier.of(Json.toStrings(Json.parse(options.apply(UshasSource.NAMESPACE))),
                options.apply(UshasSource.TABLE));
        JsonNode policy = plugin instanceof UshasCatalog c ? c.policyFor(ident) : null;
        DataSource marked = ds.copy(ds.sparkSession(), ds.className(), ds.paths(), ds.userSpecifiedSchema(),
                ds.partitionColumns(), ds.bucketSpec(), options.updated(STREAM_MARK, SECRET), ds.catalogTable(),
                ds.copy$default$9());
        StreamingRelation relation = s.copy(marked, s.sourceName(), s.output(), s.sourceIdentifyingName());
        relation.copyTagsFrom(s);
        if (policy == null) return relation;
        String table = options.apply(UshasSource.CATALOG) + "." + String.join(".", UshasCatalog.toParts(ident));
        return decorate(relation, policy, table);
    }

    static UshasFileIndex indexOf(LogicalPlan p) {
        return p instanceof LogicalRelation lr && lr.relation() instanceof HadoopFsRelation h
                && h.location() instanceof UshasFileIndex i ? i : null;
    }

    private LogicalPlan wrap(LogicalRelation lr) {
        HadoopFsRelation h = (HadoopFsRelation) lr.relation();
        UshasFileIndex index = (UshasFileIndex) h.location();
        JsonNode policy = index.policy();
        if (policy.path("refuse").asBoolean(false)) {
            throw refused(index.tableName(), "its policy was not loaded with the table (load the table again)");
        }
        HadoopFsRelation marked = h.copy(index.withPolicyApplied(), h.partitionSchema(), h.dataSchema(),
                h.bucketSpec(), h.fileFormat(), h.options(), h.sparkSession());
        LogicalRelation relation = lr.copy(marked, lr.output(), lr.catalogTable(), lr.isStreaming(), lr.stream());
        relation.copyTagsFrom(lr);
        return decorate(relation, policy, index.tableName());
    }

    /** {@code Project(masks, Filter(rowFilter, relation))}. */
    private LogicalPlan decorate(LogicalPlan relation, JsonNode policy, String tableName) {
        Resolver values = new Resolver(policy);
        LogicalPlan out = relation;
        String filter = Json.text(policy, "row_filter");
        if (filter != null) out = new Filter(values.parse(filter, "row filter"), out);
        JsonNode masks = policy.get("masks");
        if (masks != null && masks.size() > 0) {
            Map<String, Expression> byColumn = new HashMap<>();
            for (JsonNode m : masks) {
                byColumn.put(m.get("column").asText().toLowerCase(Locale.ROOT),
                        values.parse(m.get("expression").asText(), "mask of column " + m.get("column").asText()));
            }
            List<NamedExpression> list = new ArrayList<>();
            for (org.apache.spark.sql.catalyst.expressions.Attribute a : CollectionConverters.asJava(relation.output())) {
                Expression mask = byColumn.remove(a.name().toLowerCase(Locale.ROOT));
                // every column a new attribute (as a view's output): a self join renews the relation below
                // and rewrites what the aliases read; by name, resolved (like the filter) against the relation
                // Spark ends up with
                Expression value = mask == null ? org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute$.MODULE$
                        .quoted(a.name()) : new Cast(mask, a.dataType(), Option.empty());
                list.add(new Alias(value, a.name(), NamedExpression.newExprId(), a.qualifier(), Option.apply(a.metadata()),
                        scala.collection.immutable.List$.MODULE$.empty()));
            }
            if (!byColumn.isEmpty()) {
                throw refused(tableName, "it masks column(s) " + byColumn.keySet() + " it does not have");
            }
            Project project = new Project(CollectionConverters.asScala(list).toList(), out);
            // _metadata and the other file metadata columns stay reachable (of the filtered rows)
            @SuppressWarnings("unchecked")
            scala.collection.immutable.Seq<org.apache.spark.sql.catalyst.expressions.Attribute> hidden =
                    (scala.collection.immutable.Seq<org.apache.spark.sql.catalyst.expressions.Attribute>)
                            (scala.collection.immutable.Seq<?>) relation.metadataOutput();
            project.setTagValue(Project.hiddenOutputTag(), hidden);
            out = project;
        }
        return out;
    }

    /**
     * Checks a filter or mask ({@code check}: {@code kind} "filter" | "mask", {@code column}, {@code expression},
     * {@code user}, {@code principals}) against the table's columns the way a read resolves it: it must
     * parse, name existing columns and functions, and be a boolean (a filter) or castable to the column's
     * type (a mask). Spark's own error (UNRESOLVED_COLUMN, PARSE_SYNTAX_ERROR, ...) or USHAS_InvalidPolicy.
     */
    static void check(org.apache.spark.sql.classic.SparkSession session,
                      org.apache.spark.sql.connector.catalog.Column[] columns, JsonNode check) {
        StructType schema = org.apache.spark.sql.connector.catalog.CatalogV2Util.v2ColumnsToStructType(columns);
        LogicalPlan table = org.apache.spark.sql.catalyst.plans.logical.LocalRelation$.MODULE$.apply(schema);
        RowPolicies rule = new RowPolicies(session);
        boolean filter = "filter".equals(Json.text(check, "kind"));
        String what = filter ? "row filter" : "mask of column " + Json.text(check, "column");
        Expression e = rule.new Resolver(check).parse(Json.text(check, "expression"), what);
        Alias alias = new Alias(e, "policy", NamedExpression.newExprId(), scala.collection.immutable.List$.MODULE$.empty(),
                Option.empty(), scala.collection.immutable.List$.MODULE$.empty());
        LogicalPlan plan = new Project(CollectionConverters.asScala(List.<NamedExpression>of(alias)).toList(), table);
        org.apache.spark.sql.types.DataType type = org.apache.spark.sql.classic.Dataset.ofRows(session, plan)
                .schema().fields()[0].dataType();
        if (filter && !(type instanceof org.apache.spark.sql.types.BooleanType)) {
            throw Errors.sneak(Errors.analysis("USHAS_InvalidPolicy", "the row filter `" + Json.text(check, "expression")
                    + "` is of type " + type.sql() + ", not BOOLEAN"));
        }
        if (!filter) {
            org.apache.spark.sql.types.DataType target = schema.apply(schema.fieldIndex(Json.text(check, "column"))).dataType();
            if (!Cast.canCast(type, target)) {
                throw Errors.sneak(Errors.analysis("USHAS_InvalidPolicy", "the " + what + " is of type " + type.sql()
                        + ", which cannot be cast to the column's type " + target.sql()));
            }
        }
    }

    static RuntimeException refused(UshasFileIndex index, String why) {
        return refused(index.tableName(), why);
    }

    static RuntimeException refused(String tableName, String why) {
        return Errors.sneak(Errors.analysis("USHAS_RowPolicy", "table " + tableName
                + " has a row filter or column mask and cannot be read: " + why));
    }

    /**
     * Parses a policy expression with the session's parser and replaces {@code current_user()} (also
     * {@code current_user}, {@code user()}, {@code session_user()}) by the user and
     * {@code is_member('principal')} by whether the user holds it ({@code 'role:x'}, {@code 'group:x'},
     * {@code 'user:x'}; a bare name is a group or a role).
     */
    final class Resolver {
        private final String user;
        private final Set<String> principals = new HashSet<>();

        Resolver(JsonNode policy) {
            this.user = Json.text(policy, "user");
            JsonNode held = policy.get("principals");
            if (held != null) for (JsonNode p : held) principals.add(p.asText());
        }

        Expression parse(String text, String what) {
            Expression parsed;
            try {
                parsed = session.sessionState().sqlParser().parseExpression(text);
            } catch (Exception e) {  // ParseException: [PARSE_SYNTAX_ERROR] ... in the message
                throw Errors.sneak(Errors.analysis("USHAS_InvalidPolicy", "the " + what + " `" + text
                        + "` is not a SQL expression: " + e.getMessage(), e));
            }
            return resolve(parsed, what);
        }

        Expression resolve(Expression e, String what) {
            return e.transformUp(new AbstractPartialFunction<Expression, Expression>() {
                @Override
                public boolean isDefinedAt(Expression x) {
                    return x instanceof CurrentUser || (x instanceof UnresolvedFunction f && special(f) != null);
                }

                @Override
                public Expression apply(Expression x) {
                    if (x instanceof CurrentUser) return Literal$.MODULE$.create(user, DataTypes.StringType);
                    UnresolvedFunction f = (UnresolvedFunction) x;
                    List<Expression> args = CollectionConverters.asJava(f.arguments());
                    if ("is_member".equals(special(f))) {
                        if (args.size() != 1 || !(args.get(0) instanceof Literal l) || l.value() == null) {
                            throw Errors.sneak(Errors.analysis("USHAS_InvalidPolicy", "the " + what
                                    + ": is_member takes one string literal, e.g. is_member('role:admins')"));
                        }
                        return Literal$.MODULE$.create(isMember(l.value().toString()), DataTypes.BooleanType);
                    }
                    if (!args.isEmpty()) {
                        throw Errors.sneak(Errors.analysis("USHAS_InvalidPolicy", "the " + what
                                + ": current_user() takes no argument"));
                    }
                    return Literal$.MODULE$.create(user, DataTypes.StringType);
                }
            });
        }

        private String special(UnresolvedFunction f) {
            List<String> parts = CollectionConverters.asJava(f.nameParts());
            if (parts.size() != 1) return null;
            String n = parts.get(0).toLowerCase(Locale.ROOT);
            if (n.equals("is_member")) return n;
            if (n.equals("current_user") || n.equals("user") || n.equals("session_user")) return "current_user";
            return null;
        }

        boolean isMember(String principal) {
            String p = principal.trim();
            if (p.contains(":")) return principals.contains(p);
            return principals.contains("group:" + p) || principals.contains("role:" + p);
        }
    }
}
