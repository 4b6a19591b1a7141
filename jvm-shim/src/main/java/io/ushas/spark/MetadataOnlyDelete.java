package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.EliminateSubqueryAliases$;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression$;
import org.apache.spark.sql.catalyst.optimizer.ConstantFolding$;
import org.apache.spark.sql.catalyst.plans.logical.DeleteFromTable;
import org.apache.spark.sql.catalyst.plans.logical.DeleteFromTableWithFilters;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceData;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.CurrentOrigin$;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.execution.datasources.DataSourceStrategy$;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Strategy$;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StringType;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction0;
import scala.runtime.AbstractFunction1;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * {@code DELETE FROM t WHERE <partition predicates>} of an Ushas table decided during analysis, not after it
 * (docs/row-level.md). Spark 4.3 rewrites every DELETE of a row-level table into its copy-on-write plan
 * ({@code RewriteDeleteFromTable}, rule 68 of the analyzer's fixed-point {@code Resolution} batch: a
 * {@code ReplaceData} over the catalog's operation and a read relation with the file column), analyzes that plan
 * to the end, runs the whole optimizer over it, and only then, in the optimizer's {@code Pre CBO Rules} batch,
 * {@code OptimizeMetadataOnlyDeleteFromTable} asks the table {@code canDeleteWhere} and replaces the plan with
 * {@code DeleteFromTableWithFilters} (planned as Spark's {@code DeleteFromTableExec}: {@code deleteWhere}, then the
 * table's cached data refreshed). This resolution rule (an extension rule: the same {@code Resolution} batch, after
 * Spark's own rules, so in the same iteration as the rewrite) makes that same decision on the rewritten DELETE at
 * once and answers the same {@code DeleteFromTableWithFilters}: the rest of the analysis and the optimizer then
 * see one leaf command instead of the row-level plan. Same exec, same bridge calls ({@code load_table} when Spark
 * resolves the target with write privileges, {@code delete_where}), privileges, row-filter refusal (the rewrite,
 * which still runs first, refuses a filtered user), audit, history, cache refresh and answer.
 *
 * <p>It decides exactly as Spark's rule, on a subset: a deterministic condition without subqueries, constant
 * folded ({@code ConstantFolding}: Spark's optimizer folds before its rule), every conjunct translated to a V2
 * predicate ({@code DataSourceV2Strategy.translateFilterV2}, as Spark) and {@link UshasRowLevel.Target#canDeleteWhere}
 * accepting them (a Java-only check: every predicate on partition columns and one Python can evaluate). Anything
 * else is left to Spark's path, which may still find it metadata-only after its other optimizations: this rule never
 * makes a DELETE metadata-only that Spark's would not, and keeps Spark's path for the rest (every DELETE when
 * {@code spark.sql.optimizer.excludedRules} names Spark's rule). Off with {@value #CONF}{@code =false}.
 */
final class MetadataOnlyDelete extends Rule<LogicalPlan> {
    /** the session setting that turns the rule off ({@code false}): Spark's own path for every DELETE */
    static final String CONF = "spark.ushas.delete.metadataOnlyAtAnalysis";

    private final SparkSession session;

    MetadataOnlyDelete(SparkSession session) {
        this.session = session;
    }

    static Function1<SparkSession, Rule<LogicalPlan>> factory() {
        return new AbstractFunction1<>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new MetadataOnlyDelete(session);
            }
        };
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        // a statement's command is its plan's root: nothing else to look at for every other plan analyzed
        if (!(plan instanceof ReplaceData rd)) return plan;
        UshasRowLevel.Operation op = UshasRowLevel.operationOf(rd);
        if (op == null || op.command() != RowLevelOperation.Command.DELETE) return plan;
        if (!(rd.originalTable() instanceof DataSourceV2Relation relation)
                || !(relation.table() instanceof UshasRowLevel.Target target)) return plan;
        if (!enabled(session)) return plan;
        Predicate[] predicates = predicates(rd.condition(), relation);
        if (predicates == null || !target.canDeleteWhere(predicates)) return plan;
        return withFilters(rd, relation, predicates);
    }

    /** The rule on ({@value #CONF}) and Spark's own rule not excluded ({@code spark.sql.optimizer.excludedRules}:
     *  Spark's path never deletes by filters then). */
    static boolean enabled(SparkSession session) {
        if (!Boolean.parseBoolean(session.conf().get(CONF, "true").trim())) return false;
        Option<String> excluded = SQLConf.get().optimizerExcludedRules();
        return !(excluded.isDefined() && excluded.get().contains("OptimizeMetadataOnlyDeleteFromTable"));
    }

    /** Spark's metadata-only command for {@code statement}, with its origin (its SQL text: what the lineage listener
     *  records), as a rule's transform sets it. */
    private static LogicalPlan withFilters(LogicalPlan statement, DataSourceV2Relation relation, Predicate[] predicates) {
        return CurrentOrigin$.MODULE$.withOrigin(statement.origin(), new AbstractFunction0<LogicalPlan>() {
            @Override
            public LogicalPlan apply() {
                return new DeleteFromTableWithFilters(relation,
                        CollectionConverters.asScala(List.of(predicates)).toList(), relation.options());
            }
        });
    }

    /**
     * The same decision before Spark's {@code Resolution} batch, for the plain case: a rule of the {@code Hints}
     * batch (the extension's hint resolution rules; it runs before {@code Resolution}) that takes
     * {@code DELETE FROM <table> WHERE <condition>} while its target is still an {@code UnresolvedRelation} and its
     * condition compares columns with literals only ({@code =}, {@code <=>}, {@code <}, {@code <=}, {@code >},
     * {@code >=}, {@code IN}, {@code IS [NOT] NULL}, {@code AND}, {@code OR}, {@code NOT}; no cast, function or
     * subquery, no string of another collation). It resolves the target with Spark's own {@code ResolveRelations} (the
     * same {@code loadTable} with write privileges, temporary views and the relation cache as Spark's), the
     * condition's columns against it (the session's resolver); when the target is an Ushas table, the condition
     * is resolved as it stands (its types need no coercion) and {@link UshasRowLevel.Target#canDeleteWhere} accepts
     * its predicates, it refuses what Spark's rewrite refuses ({@link UshasRowLevel#refuse}: a row filter or masks)
     * and answers {@code DeleteFromTableWithFilters}: Spark's {@code RewriteDeleteFromTable} and the analysis of
     * its plan never run. Otherwise it answers the statement with its target resolved, or (another catalog's
     * table, a view) the statement as it was: the {@code Resolution} batch and the rule above go on as before.
     * Off, as the rule above, with {@value #CONF}{@code =false}; never inside a catalog transaction.
     */
    static final class BeforeResolution extends Rule<LogicalPlan> {
        private final SparkSession session;

        BeforeResolution(SparkSession session) {
            this.session = session;
        }

        static Function1<SparkSession, Rule<LogicalPlan>> factory() {
            return new AbstractFunction1<>() {
                @Override
                public Rule<LogicalPlan> apply(SparkSession session) {
                    return new BeforeResolution(session);
                }
            };
        }

        @Override
        public LogicalPlan apply(LogicalPlan plan) {
            if (!(plan instanceof DeleteFromTable d) || !ushasTarget(d.table())) return plan;
            if (!plain(d.condition()) || d.condition().references().isEmpty()) return plan;
            if (!enabled(session) || session.sessionState().catalogManager().transaction().isDefined()) return plan;
            LogicalPlan resolved = session.sessionState().analyzer().ResolveRelations().apply(d);
            if (!(resolved instanceof DeleteFromTable r)
                    || !(EliminateSubqueryAliases$.MODULE$.apply(r.table()) instanceof DataSourceV2Relation relation)
                    || !(relation.table() instanceof UshasRowLevel.Target target)) return plan;
            Expression condition = resolve(d.condition(), r.table(), SQLConf.get().resolver());
            if (!condition.resolved() || !sameCollation(condition)) return resolved;
            Predicate[] predicates = predicates(condition, relation);
            if (predicates == null || !target.canDeleteWhere(predicates)) return resolved;
            UshasRowLevel.refuse(target.table(), "DELETE FROM");  // as Spark's rewrite (newRowLevelOperationBuilder)
            return withFilters(d, relation, predicates);
        }

        /** {@code t} or {@code t AS alias}, not yet resolved, whose name is in an Ushas catalog (its first part a
         *  catalog's name, else the current catalog, as Spark resolves it): the others are not even loaded here. A
         *  temporary view of the name is still found first by {@code ResolveRelations}. */
        private boolean ushasTarget(LogicalPlan table) {
            LogicalPlan t = table instanceof org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias a ? a.child() : table;
            if (!(t instanceof UnresolvedRelation u) || u.isStreaming()) return false;
            org.apache.spark.sql.connector.catalog.CatalogManager m = session.sessionState().catalogManager();
            scala.collection.immutable.Seq<String> parts = u.multipartIdentifier();
            return (parts.size() > 1 && m.isCatalogRegistered(parts.head()) ? m.catalog(parts.head())
                    : m.currentCatalog()) instanceof UshasCatalog;
        }

        /** Columns compared with literals, combined by AND / OR / NOT: nothing Spark's analysis would change once
         *  its columns are resolved, when their types match (else it stays unresolved here). */
        private static boolean plain(Expression e) {
            if (e instanceof UnresolvedAttribute || e instanceof Literal) return true;
            if (!(e instanceof And || e instanceof Or || e instanceof Not || e instanceof EqualTo
                    || e instanceof EqualNullSafe || e instanceof LessThan || e instanceof LessThanOrEqual
                    || e instanceof GreaterThan || e instanceof GreaterThanOrEqual || e instanceof In
                    || e instanceof IsNull || e instanceof IsNotNull)) return false;
            for (Expression c : CollectionConverters.asJava(e.children())) {
                if (!plain(c)) return false;
            }
            return true;
        }

        /** {@code e} with its columns resolved against {@code table} (a column it does not have stays unresolved). */
        private static Expression resolve(Expression e, LogicalPlan table,
                                          scala.Function2<String, String, Object> resolver) {
            if (e instanceof UnresolvedAttribute u) {
                Option<NamedExpression> got = table.resolve(u.nameParts(), resolver);
                return got.isDefined() && got.get() instanceof AttributeReference a ? a : e;
            }
            return (Expression) e.mapChildren(new AbstractFunction1<Expression, Expression>() {
                @Override
                public Expression apply(Expression c) {
                    return resolve(c, table, resolver);
                }
            });
        }

        /** Every string in {@code e} of the default collation (another one's comparison Spark's analysis coerces). */
        private static boolean sameCollation(Expression e) {
            if (e.dataType() instanceof StringType s && !s.equals(DataTypes.StringType)) return false;
            for (Expression c : CollectionConverters.asJava(e.children())) {
                if (!sameCollation(c)) return false;
            }
            return true;
        }
    }

    /** The V2 predicates of {@code condition} as Spark's {@code OptimizeMetadataOnlyDeleteFromTable} makes them, or
     *  null when Spark's rule would not get all of them here (non-deterministic, a subquery, a conjunct that does
     *  not translate). */
    static Predicate[] predicates(Expression condition, DataSourceV2Relation relation) {
        if (!condition.deterministic() || SubqueryExpression$.MODULE$.hasSubquery(condition)) return null;
        if (!condition.resolved()) return null;
        Expression folded = ((Filter) ConstantFolding$.MODULE$.apply(new Filter(condition, relation))).condition();
        List<Expression> conjuncts = new ArrayList<>();
        Deque<Expression> todo = new ArrayDeque<>();
        todo.push(folded);
        while (!todo.isEmpty()) {
            Expression e = todo.pop();
            if (e instanceof And and) {
                todo.push(and.right());
                todo.push(and.left());
            } else {
                conjuncts.add(e);
            }
        }
        @SuppressWarnings("unchecked")
        scala.collection.immutable.Seq<Attribute> output =
                (scala.collection.immutable.Seq<Attribute>) (scala.collection.immutable.Seq<?>) relation.output();
        scala.collection.immutable.Seq<Expression> normalized = DataSourceStrategy$.MODULE$.normalizeExprs(
                CollectionConverters.asScala(conjuncts).toList(), output);
        List<Predicate> out = new ArrayList<>();
        for (Expression e : CollectionConverters.asJava(normalized)) {
            Option<Predicate> p = DataSourceV2Strategy$.MODULE$.translateFilterV2(e);
            if (p.isEmpty()) return null;
            out.add(p.get());
        }
        return out.toArray(new Predicate[0]);
    }
}
