package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.MonotonicallyIncreasingID;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys$;
import org.apache.spark.sql.catalyst.plans.FullOuter$;
import org.apache.spark.sql.catalyst.plans.LeftAnti$;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.LeftSemi$;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.BROADCAST$;
import org.apache.spark.sql.catalyst.plans.logical.HintInfo;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.JoinHint;
import org.apache.spark.sql.catalyst.plans.logical.JoinStrategyHint;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeRows;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceData;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.internal.SQLConf;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A MERGE with a small source joins it by broadcast, not by a shuffle of the table (docs/row-level.md).
 *
 * <p>By default ({@value #UNMATCHED_CONF} {@code probe}) the statement's {@code MergeRows} over its full outer join
 * becomes {@link MergeProbe}: one pass over the group's rows with the source collected once and broadcast, the
 * clauses applied in the same pass, the source rows no target row matches written after the target's tasks in
 * the same commit ({@link MergeLateRows}), the files no source key can be in skipped ({@link MergeFileSkipping}).
 * It takes a deterministic ON condition with key equalities whose values compare as their bytes, a deterministic
 * source Spark would broadcast ({@code spark.sql.autoBroadcastJoinThreshold}, or {@value #MAX_BYTES_CONF} when
 * set), a table that is not bucketed. Otherwise, or with {@code scan} / {@code join}, the forms below.
 *
 * <p>With a {@code WHEN NOT MATCHED} clause Spark's {@code RewriteMergeIntoTable} (copy-on-write:
 * {@code ReplaceData}) joins the rows of the group it rewrites with the source by a <b>full outer join</b>, which
 * Spark never broadcasts: both sides are shuffled and sorted, a million target rows for a hundred source rows.
 * For a MERGE into a table of the catalog whose ON condition has an equality (a hash join) and whose source is
 * small (Spark's estimate of its size at most {@value #MAX_BYTES_CONF}: by default a tenth of
 * {@code spark.sql.autoBroadcastJoinThreshold}, 1 MB; a strategy hint on the join decides instead, though Spark
 * drops a hint written in a MERGE's source before this join), this optimizer rule
 * replaces {@code Join(T, S, FullOuter, cond)} under the statement's {@code MergeRows} by
 * <pre>
 *   Union( Join(T, S, LeftOuter, cond)             S broadcast, T streamed
 *          Project(nulls for T's columns, S's,
 *                  Join(S, Join(T', S, LeftSemi, cond), LeftAnti, cond)) )
 * </pre>
 * where {@code T'} is a second read of the table as the statement loaded it (only the columns {@code cond} needs,
 * the partitions its partition predicates select). When {@code cond} is equalities between the target and the
 * source ({@code =} or {@code <=>}) plus conjuncts on either side alone (the usual upsert), the second side is
 * instead, by default ({@value #UNMATCHED_CONF} {@code scan}, keys whose equality is their bytes'),
 * {@code MergeUnmatchedSource(keys of T' under T's conjuncts, S, keys and S's conjuncts)}: one job over the
 * target's key columns marks the source keys it meets, no join, no exchange ({@link #unmatchedByScan},
 * {@link MergeUnmatchedSourceExec}); otherwise ({@code join}, or other key types)
 * {@code Join(S, DISTINCT(keys of Join(T', S, LeftSemi, cond)), LeftAnti, keys and S's conjuncts)} with
 * the distinct keys broadcast: they are at most the source's keys, so that broadcast is as bounded as the
 * source's, and no side of it is shuffled but the keys' aggregate ({@link #unmatchedByKeys}). It is the same rows: the first side is every target row of the
 * group with its matches (a target row that matches nothing keeps nulls for the source, as in the full outer
 * join); the second the source rows no target row matches (a source row matching a row of the group matches
 * that row in {@code T'}, and conversely a row of {@code T} that matches a source row is in the group: the group
 * is selected by predicates {@code cond} implies). The output keeps the join's attributes (the union's are its
 * first side's, nullable as the full outer join's), so {@code MergeRows} reads the same presence columns
 * ({@code __row_from_target}, {@code __row_from_source}) and row id. The target is still never broadcast or
 * replicated (Spark's {@code NO_BROADCAST_AND_REPLICATION} hint stays on it): every match of a target row comes
 * out of the one task that reads it, so {@code MergeRows}' cardinality check ({@code MERGE_CARDINALITY_VIOLATION})
 * is exact. The joins' form reads the condition's columns of the group a second time and the source three times
 * (two broadcasts, the anti join's streamed side or shuffle): it pays off when the source is small next to the
 * group, hence a limit well under Spark's threshold (a tenth; measured: a 40 kB source into a group of
 * 10 million rows 0.63x of Spark's plan; a 2 MB source into a million rows costs more than it,
 * docs/benchmarks.md); the scan's form reads the key columns once and the source twice, in four jobs: level with
 * Spark's plan for a 40 kB source into a million rows, 1.11x its CPU for a 2 MB one (its driver's work on the
 * source), so the same limit.
 * Left as Spark planned it: a source Spark cannot size or that is too big, a condition without an
 * equality (Spark already broadcasts a nested loop join), a non-deterministic source or condition, a source
 * calling Python (the source is read three times), a condition on a hidden column, another catalog's table, and
 * every plan when {@value #CONF} is {@code false}.
 */
final class MergeBroadcastJoin extends Rule<LogicalPlan> {
    /** the session setting that turns the rule off ({@code false}) */
    static final String CONF = "spark.ushas.merge.broadcastSource";
    /** the largest source (Spark's estimate, bytes or a size such as {@code 4m}) the rule broadcasts; by default a
     *  tenth of {@code spark.sql.autoBroadcastJoinThreshold}, never more than it */
    static final String MAX_BYTES_CONF = "spark.ushas.merge.broadcastSource.maxBytes";

    /** how the source rows no target row matches are found: {@code scan} ({@link MergeUnmatchedSource}: one job
     *  over the target's key columns, the default) or {@code join} (the semi join, distinct keys and anti join) */
    static final String UNMATCHED_CONF = "spark.ushas.merge.unmatchedSource";

    private final SparkSession session;

    MergeBroadcastJoin(SparkSession session) {
        this.session = session;
    }

    static Function1<SparkSession, Rule<LogicalPlan>> factory() {
        return new AbstractFunction1<>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new MergeBroadcastJoin(session);
            }
        };
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if (!Boolean.parseBoolean(session.conf().get(CONF, "true").trim())) return plan;
        return plan.transformDown(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan p) {
                if (!(p instanceof ReplaceData rd)) return false;
                UshasRowLevel.Operation op = UshasRowLevel.operationOf(rd);
                return op != null && op.command() == RowLevelOperation.Command.MERGE
                        && rd.originalTable() instanceof DataSourceV2Relation;
            }

            @Override
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> fallback) {
                if (!isDefinedAt(p)) return fallback.apply(p);
                ReplaceData rd = (ReplaceData) p;
                String form = form();
                LogicalPlan query = "probe".equals(form) ? probeQuery(rd, probeMaxBytes()) : rd.query();
                if (query == rd.query()) {  // not the probe's form, or not a MERGE it takes: the union's forms
                    long max = maxBytes();
                    query = rewriteQuery(rd.query(), (DataSourceV2Relation) rd.originalTable(), max,
                            "join".equals(form) ? -1 : max);
                }
                @SuppressWarnings("unchecked")
                B1 out = (B1) (query == rd.query() ? rd
                        : rd.withNewChildren(CollectionConverters.asScala(List.of(query)).toList()));
                return out;
            }
        });
    }

    /** How the source rows no target row matches are found ({@value #UNMATCHED_CONF}): {@code probe} (the default:
     *  {@link MergeProbe}, by the tasks that read the target, written after them), {@code scan}
     *  ({@link MergeUnmatchedSource}) or {@code join} (wave 17's joins); another value is refused naming it. */
    private String form() {
        String v = session.conf().get(UNMATCHED_CONF, "probe").trim().toLowerCase(java.util.Locale.ROOT);
        return switch (v) {
            case "probe", "scan", "join" -> v;
            default -> throw new IllegalArgumentException(UNMATCHED_CONF + ": expected probe, scan or join, got '" + v
                    + "'");
        };
    }

    /** The probe's form's limit: {@value #MAX_BYTES_CONF} when set, else Spark's broadcast threshold (it reads the
     *  source once and broadcasts it once, as Spark's broadcast join does); negative: never. */
    private long probeMaxBytes() {
        long threshold = SQLConf.get().autoBroadcastJoinThreshold();
        return session.conf().get(MAX_BYTES_CONF, "").trim().isEmpty() ? (threshold < 0 ? -1 : threshold) : maxBytes();
    }

    /** {@value #MAX_BYTES_CONF}, at most Spark's broadcast threshold (negative: no source is broadcast); by default
     *  a tenth of it, for either form (measured, docs/benchmarks.md "Wave 18": the scan's form level with Spark's
     *  plan for a 40 kB source into a million rows, 1.11x its CPU for the bench's 2 MB source). */
    private long maxBytes() {
        long threshold = SQLConf.get().autoBroadcastJoinThreshold();
        String v = session.conf().get(MAX_BYTES_CONF, "").trim();
        if (v.isEmpty()) return threshold < 0 ? -1 : threshold / 10;
        long max;
        try {
            max = org.apache.spark.network.util.JavaUtils.byteStringAsBytes(v);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(MAX_BYTES_CONF + ": expected a size in bytes (such as 1048576 or 1m), got '"
                    + v + "'");
        }
        return threshold < 0 ? -1 : Math.min(max, threshold);
    }

    /** The statement's query with its {@code MergeRows} over a full outer join replaced by {@link MergeProbe}, or
     *  the same plan when the MERGE is not one the probe takes ({@link #probes}). */
    private static LogicalPlan probeQuery(ReplaceData rd, long maxBytes) {
        UshasRowLevel.Operation op = UshasRowLevel.operationOf(rd);
        if (op == null || op.bucketed()) return rd.query();  // a bucket a task: rows written after them break it
        return rd.query().transformDown(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan p) {
                return p instanceof MergeRows m && m.child() instanceof Join j && j.joinType() == FullOuter$.MODULE$
                        && probes(j, maxBytes);
            }

            @Override
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> fallback) {
                if (!isDefinedAt(p)) return fallback.apply(p);
                MergeRows m = (MergeRows) p;
                Join j = (Join) m.child();
                LogicalPlan out = new MergeProbe(withoutRowId(j.left()), j.right(), j.condition().get(),
                        m.matchedInstructions(), m.notMatchedInstructions(), m.notMatchedBySourceInstructions(),
                        m.checkCardinality(), m.output(), op, rd.projections().rowProjection());
                out.copyTagsFrom(m);
                @SuppressWarnings("unchecked")
                B1 b = (B1) out;
                return b;
            }
        });
    }

    /** Whether {@link MergeProbe} takes the join: a deterministic condition with key equalities between the target
     *  and the source whose values compare as their bytes ({@link #split}, {@link #bytesEquality}), and a
     *  deterministic source Spark would broadcast within {@code maxBytes}. */
    private static boolean probes(Join j, long maxBytes) {
        if (j.condition().isEmpty()) return false;
        Expression cond = j.condition().get();
        if (!cond.deterministic() || !j.right().deterministic()) return false;
        if (!broadcastable(j.right(), j.hint().rightHint(), maxBytes)) return false;
        Split keyed = split(cond, j.left().outputSet(), j.right().outputSet());
        if (keyed == null) return false;
        for (KeyPair k : keyed.keys()) {
            if (!k.target().dataType().sameType(k.source().dataType()) || !bytesEquality(k.target().dataType())) {
                return false;
            }
        }
        return true;
    }

    /** The target's side of the join without the row id Spark adds for the cardinality check ({@link MergeProbe}
     *  checks it by itself, each target row's matches in hand). */
    private static LogicalPlan withoutRowId(LogicalPlan left) {
        if (!(left instanceof Project p)) return left;
        List<NamedExpression> kept = new ArrayList<>();
        for (NamedExpression e : CollectionConverters.asJava(p.projectList())) {
            if (e instanceof Alias a && a.child() instanceof MonotonicallyIncreasingID) continue;
            kept.add(e);
        }
        return kept.size() == p.projectList().size() ? left
                : new Project(CollectionConverters.asScala(kept).toList(), p.child());
    }

    /** The statement's query with its {@code MergeRows}' full outer join rewritten, or the same plan. */
    private static LogicalPlan rewriteQuery(LogicalPlan query, DataSourceV2Relation table, long maxBytes,
                                            long joinMaxBytes) {
        return query.transformDown(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan p) {
                return p instanceof MergeRows m && m.child() instanceof Join j && j.joinType() == FullOuter$.MODULE$;
            }

            @Override
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> fallback) {
                if (!isDefinedAt(p)) return fallback.apply(p);
                MergeRows m = (MergeRows) p;
                LogicalPlan join = rewrite((Join) m.child(), table, maxBytes, joinMaxBytes, m.checkCardinality());
                LogicalPlan out = m;
                if (join != null && checksCardinality(join)) {  // the scan checks it: MergeRows need not, nor the row id
                    out = new MergeRows(m.isSourceRowPresent(), m.isTargetRowPresent(), m.matchedInstructions(),
                            m.notMatchedInstructions(), m.notMatchedBySourceInstructions(), false, m.output(), join);
                    out.copyTagsFrom(m);
                } else if (join != null) {
                    out = m.withNewChildren(CollectionConverters.asScala(List.of(join)).toList());
                }
                @SuppressWarnings("unchecked")
                B1 b = (B1) out;
                return b;
            }
        });
    }

    /** The union for {@code j} (target left, source right), or null when the join is left as it is. The source
     *  rows no target row matches come from {@link #unmatchedByScan} when {@code joinMaxBytes} is not negative
     *  (the source within {@code maxBytes}), else, or when the condition does not suit it, from the joins (the
     *  source within {@code joinMaxBytes} when that is not negative). */
    static LogicalPlan rewrite(Join j, DataSourceV2Relation table, long maxBytes, long joinMaxBytes,
                               boolean checkCardinality) {
        if (j.condition().isEmpty()) return null;
        Expression cond = j.condition().get();
        LogicalPlan source = j.right();
        if (!cond.deterministic() || !source.deterministic() || callsPython(source)) return null;
        if (ExtractEquiJoinKeys$.MODULE$.unapply(j).isEmpty()) return null;  // no equality: not a hash join
        if (!broadcastable(source, j.hint().rightHint(), maxBytes)) return null;
        // the second read of the table: the condition's columns of the target on a fresh copy of its relation
        DataSourceV2Relation again = table.newInstance();
        List<AttributeReference> columns = CollectionConverters.asJava(table.output());
        List<AttributeReference> renewed = CollectionConverters.asJava(again.output());
        Map<ExprId, Attribute> copies = new HashMap<>();
        for (int i = 0; i < columns.size(); i++) copies.put(columns.get(i).exprId(), renewed.get(i));
        for (Attribute a : CollectionConverters.asJava(cond.references().toSeq())) {
            if (!source.outputSet().contains(a) && !copies.containsKey(a.exprId())) return null;  // a hidden column
        }
        Expression onCopy = cond.transform(new AbstractPartialFunction<Expression, Expression>() {
            @Override
            public boolean isDefinedAt(Expression e) {
                return e instanceof AttributeReference a && copies.containsKey(a.exprId());
            }

            @Override
            public <A1 extends Expression, B1> B1 applyOrElse(A1 e, Function1<A1, B1> fallback) {
                if (!isDefinedAt(e)) return fallback.apply(e);
                @SuppressWarnings("unchecked")
                B1 out = (B1) copies.get(((AttributeReference) e).exprId());
                return out;
            }
        });
        Option<HintInfo> broadcast = Option.apply(new HintInfo(Option.apply((JoinStrategyHint) BROADCAST$.MODULE$)));
        // every target row of the group with its matches: the source broadcast, the target streamed (its hint
        // against broadcasting and replicating it stays)
        Join matched = new Join(j.left(), source, LeftOuter$.MODULE$, j.condition(),
                new JoinHint(j.hint().leftHint(), broadcast));
        // the source rows no target row matches
        Split keyed = split(onCopy, again.outputSet(), source.outputSet());
        LogicalPlan unmatched = joinMaxBytes >= 0 ? unmatchedByScan(again, source, keyed, checkCardinality) : null;
        if (unmatched == null) {
            // the joins' form, under its own limit when the scan's was the one checked above
            if (joinMaxBytes >= 0 && !broadcastable(source, j.hint().rightHint(), joinMaxBytes)) return null;
            Join hit = new Join(again, source, LeftSemi$.MODULE$, Option.apply(onCopy),
                    new JoinHint(Option.empty(), broadcast));
            unmatched = unmatchedByKeys(hit, source, keyed, broadcast);
            if (unmatched == null) unmatched = new Join(source, hit, LeftAnti$.MODULE$, Option.apply(onCopy), JoinHint.NONE());
        }
        List<NamedExpression> row = new ArrayList<>();
        for (Attribute a : CollectionConverters.asJava(j.left().output())) {
            row.add(new Alias(Literal.create(null, a.dataType()), a.name(), NamedExpression.newExprId(),
                    scala.collection.immutable.List$.MODULE$.empty(), Option.empty(),
                    scala.collection.immutable.List$.MODULE$.empty()));
        }
        row.addAll(CollectionConverters.asJava(source.output()));
        LogicalPlan sourceOnly = new Project(CollectionConverters.asScala(row).toList(), unmatched);
        return new Union(CollectionConverters.asScala(List.<LogicalPlan>of(matched, sourceOnly)).toList(), false, false);
    }

    /** An equality of the ON condition between an expression of the target's and one of the source's. */
    record KeyPair(Expression target, Expression source, boolean nullSafe) {
    }

    /** The ON condition as equalities between the target and the source, conjuncts on the target alone and
     *  conjuncts on the source alone (or on neither); null when a conjunct is anything else (a range between
     *  the two, an OR across them...) or no equality is found. */
    record Split(List<KeyPair> keys, List<Expression> targetOnly, List<Expression> sourceOnly) {
        /** the target's side of each key equality */
        List<Expression> targetKeys() {
            return keys.stream().map(KeyPair::target).toList();
        }

        /** the source's side of each key equality */
        List<Expression> sourceKeys() {
            return keys.stream().map(KeyPair::source).toList();
        }

        /** whether each key equality is {@code <=>} (a NULL matches a NULL) */
        boolean[] nullSafe() {
            boolean[] out = new boolean[keys.size()];
            for (int i = 0; i < out.length; i++) out[i] = keys.get(i).nullSafe();
            return out;
        }
    }

    /** The target's side of {@code split}'s equalities as named key columns ({@code keys}), and the condition
     *  matching a source row with them ({@code on}): the equalities on those columns, each of its kind (a NULL
     *  key matches as in Spark's join: never for {@code =}, a NULL for {@code <=>}), and the source's conjuncts. */
    record KeyedOn(List<NamedExpression> keys, Expression on) {
    }

    private static KeyedOn keyedOn(Split split) {
        List<NamedExpression> keys = new ArrayList<>();
        Expression on = null;
        int i = 0;
        for (KeyPair k : split.keys()) {
            Alias key = new Alias(k.target(), "__ushas_merge_key_" + i++, NamedExpression.newExprId(),
                    scala.collection.immutable.List$.MODULE$.empty(), Option.empty(),
                    scala.collection.immutable.List$.MODULE$.empty());
            keys.add(key);
            Expression eq = k.nullSafe() ? new EqualNullSafe(key.toAttribute(), k.source())
                    : new EqualTo(key.toAttribute(), k.source());
            on = on == null ? eq : new And(on, eq);
        }
        for (Expression e : split.sourceOnly()) on = new And(on, e);
        return new KeyedOn(keys, on);
    }

    static Split split(Expression cond, AttributeSet target, AttributeSet source) {
        List<KeyPair> keys = new ArrayList<>();
        List<Expression> targetOnly = new ArrayList<>();
        List<Expression> sourceOnly = new ArrayList<>();
        List<Expression> todo = new ArrayList<>(List.of(cond));
        while (!todo.isEmpty()) {
            Expression e = todo.remove(todo.size() - 1);
            if (e instanceof And and) {
                todo.add(and.left());
                todo.add(and.right());
            } else if (e.references().subsetOf(source)) {  // the source alone, or a constant
                sourceOnly.add(e);
            } else if (e.references().subsetOf(target)) {
                targetOnly.add(e);
            } else if (e instanceof BinaryComparison c && (c instanceof EqualTo || c instanceof EqualNullSafe)) {
                Expression l = c.left();
                Expression r = c.right();
                boolean nullSafe = c instanceof EqualNullSafe;
                if (sides(l, target) && sides(r, source)) keys.add(new KeyPair(l, r, nullSafe));
                else if (sides(r, target) && sides(l, source)) keys.add(new KeyPair(r, l, nullSafe));
                else return null;
            } else {
                return null;
            }
        }
        return keys.isEmpty() ? null : new Split(keys, targetOnly, sourceOnly);
    }

    /** Whether {@code e} reads columns of {@code side} and no others. */
    private static boolean sides(Expression e, AttributeSet side) {
        return !e.references().isEmpty() && e.references().subsetOf(side);
    }

    /**
     * The source rows no target row matches, for a condition {@link #split} takes apart (null otherwise):
     * {@code S LEFT ANTI JOIN DISTINCT(keys of hit)} on the key equalities and the source's own conjuncts, the
     * distinct keys broadcast. {@code hit} is {@code T' LEFT SEMI JOIN S} on the whole condition (on the target
     * copy {@code T'}): a source row matches a target row iff its own conjuncts hold and the target row, which
     * satisfies the target's conjuncts, has its keys; such a target row's keys are among those of {@code hit},
     * and every key of {@code hit} is one of a row of {@code T'} satisfying the target's conjuncts. The distinct
     * keys of {@code hit} are at most the source's distinct keys (each is equal, or null-safe equal, to a
     * source row's), so broadcasting them is as bounded as broadcasting the source; the equalities keep their
     * kind, so a NULL key matches as in Spark's join (never for {@code =}, a NULL for {@code <=>}).
     */
    private static Join unmatchedByKeys(Join hit, LogicalPlan source, Split split, Option<HintInfo> broadcast) {
        if (split == null) return null;
        KeyedOn keyed = keyedOn(split);
        List<NamedExpression> keys = keyed.keys();
        Expression on = keyed.on();
        List<Expression> grouping = new ArrayList<>();
        List<NamedExpression> attrs = new ArrayList<>();
        for (NamedExpression k : keys) {
            grouping.add(k.toAttribute());
            attrs.add(k.toAttribute());
        }
        LogicalPlan distinct = new Aggregate(CollectionConverters.asScala(grouping).toList(),
                CollectionConverters.asScala(attrs).toList(),
                new Project(CollectionConverters.asScala(keys).toList(), hit), Option.empty());
        return new Join(source, distinct, LeftAnti$.MODULE$, Option.apply(on), new JoinHint(Option.empty(), broadcast));
    }

    /**
     * The source rows no target row matches as {@link MergeUnmatchedSource}, for a condition {@link #split} takes
     * apart whose keys compare as their bytes (null otherwise): the node's left side is {@code again} filtered by
     * the target's conjuncts, projected to the keys; its condition the key equalities (their kind kept) and the
     * source's conjuncts. A source row matches a target row iff its own conjuncts hold and the target row, which
     * satisfies the target's conjuncts, has its keys: exactly the rows the node does not answer.
     */
    private static LogicalPlan unmatchedByScan(DataSourceV2Relation again, LogicalPlan source, Split split,
                                               boolean checkCardinality) {
        if (split == null) return null;
        for (KeyPair k : split.keys()) {
            if (!k.target().dataType().sameType(k.source().dataType()) || !bytesEquality(k.target().dataType())) {
                return null;
            }
        }
        KeyedOn keyed = keyedOn(split);
        List<NamedExpression> keys = keyed.keys();
        Expression on = keyed.on();
        LogicalPlan rows = again;
        if (!split.targetOnly().isEmpty()) rows = new org.apache.spark.sql.catalyst.plans.logical.Filter(
                split.targetOnly().stream().reduce(And::new).get(), again);
        return new MergeUnmatchedSource(new Project(CollectionConverters.asScala(keys).toList(), rows), source, on,
                checkCardinality);
    }

    /** Whether the union {@link #rewrite} made finds its unmatched source rows by {@link MergeUnmatchedSource}
     *  checking the MERGE's cardinality. */
    private static boolean checksCardinality(LogicalPlan union) {
        return union.children().size() == 2 && union.children().apply(1) instanceof Project p
                && p.child() instanceof MergeUnmatchedSource u && u.checkCardinality();
    }

    /** Whether two values of the type are equal ({@code =}) exactly when their bytes in an {@code UnsafeRow} are:
     *  integers, decimals of at most 18 digits (a long), dates, timestamps, booleans, binary, strings without a
     *  collation other than binary; not floating point (-0.0 = 0.0, NaN) nor nested types. */
    static boolean bytesEquality(org.apache.spark.sql.types.DataType t) {
        return t instanceof org.apache.spark.sql.types.IntegralType
                || t instanceof org.apache.spark.sql.types.BooleanType
                || t instanceof org.apache.spark.sql.types.DateType
                || t instanceof org.apache.spark.sql.types.TimestampType
                || t instanceof org.apache.spark.sql.types.TimestampNTZType
                || t instanceof org.apache.spark.sql.types.BinaryType
                || (t instanceof org.apache.spark.sql.types.DecimalType d && d.precision() <= 18)
                || (t instanceof org.apache.spark.sql.types.StringType s && s.supportsBinaryEquality()
                    && !s.usesTrimCollation());
    }

    /** Whether the plan calls a Python function (a UDF, pandas or arrow): the rewrite reads the source three
     *  times, and such a source is dear to compute however small its rows. */
    static boolean callsPython(LogicalPlan plan) {
        return plan.exists(new AbstractFunction1<LogicalPlan, Object>() {
            @Override
            public Object apply(LogicalPlan p) {
                for (Expression e : CollectionConverters.asJava(p.expressions())) {
                    if (e.exists(new AbstractFunction1<Expression, Object>() {
                        @Override
                        public Object apply(Expression x) {
                            return x instanceof org.apache.spark.sql.catalyst.expressions.PythonFuncExpression;
                        }
                    })) return true;
                }
                return false;
            }
        });
    }

    /** Spark's rule for broadcasting a join side, with the rule's own limit: a hint for or against it, else its
     *  estimated size at most {@code maxBytes} (negative: never); unknown (an RDD's rows) is too big. */
    static boolean broadcastable(LogicalPlan source, Option<HintInfo> hint, long maxBytes) {
        if (hint.isDefined() && hint.get().strategy().isDefined()) {
            return hint.get().strategy().get() == BROADCAST$.MODULE$;
        }
        if (maxBytes < 0) return false;
        BigInteger size;
        try {
            size = source.stats().sizeInBytes().bigInteger();
        } catch (RuntimeException e) {  // a relation that cannot estimate before its scan is planned: leave it
            return false;
        }
        return size.signum() >= 0 && size.compareTo(BigInteger.valueOf(maxBytes)) <= 0;
    }
}
