package io.ushas.spark;

import org.apache.spark.Dependency;
import org.apache.spark.OneToOneDependency;
import org.apache.spark.Partition;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.rdd.PartitionPruningRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Ascending$;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NullsFirst$;
import org.apache.spark.sql.catalyst.expressions.Predicate;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.MergeRows;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceRDD;
import org.apache.spark.sql.execution.datasources.v2.DataSourceRDDPartition;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.util.CollectionAccumulator;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * {@link MergeProbe} planned: one pass over the group's rows, no exchange and no {@code MergeRows} operator. It
 * collects the source (small: the rule only makes this node for a source Spark would broadcast), indexes its rows
 * by the ON condition's key equalities, broadcasts them, and maps every target row to the rows {@code MergeRows}
 * would give it: its matches (the whole condition evaluated on each source row with its keys) through the
 * {@code WHEN MATCHED} instructions, or none through {@code WHEN NOT MATCHED BY SOURCE} (the carry-over of a
 * copy-on-write). A target row with two matches is Spark's {@code MERGE_CARDINALITY_VIOLATION} when the statement
 * checks it (every match of a target row comes out of the task that reads it: exact). The source rows no target
 * row can match (a NULL in a plain equality; a key outside the footer bounds of every file of the group:
 * {@link MergeSourceIndex}, {@link MergeFileSkipping}) go through the {@code WHEN NOT MATCHED} instructions in tasks
 * of their own, in the same job ({@link MergeInserts}). Each task marks the source rows it matched in a bit set,
 * added to an accumulator when its rows are done; the statement's write reads it after its tasks and writes the
 * other source rows no task marked through the {@code WHEN NOT MATCHED} instructions, in the same commit
 * ({@link MergeLateRows}, handed to the write through the statement's operation).
 */
public final class MergeProbeExec extends SparkPlan {
    private final SparkPlan left;
    private final SparkPlan right;
    private final Expression condition;
    private final Seq<MergeRows.Instruction> matched;
    private final Seq<MergeRows.Instruction> notMatched;
    private final Seq<MergeRows.Instruction> notMatchedBySource;
    private final boolean checkCardinality;
    private final Seq<Attribute> output;
    private final transient UshasRowLevel.Operation operation;  // the driver's (a plan may be serialized)
    private final ProjectingInternalRow rowProjection;
    private transient RDD<InternalRow> result;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public MergeProbeExec(SparkPlan left, SparkPlan right, Expression condition, Seq<MergeRows.Instruction> matched,
                          Seq<MergeRows.Instruction> notMatched, Seq<MergeRows.Instruction> notMatchedBySource,
                          boolean checkCardinality, Seq<Attribute> output, UshasRowLevel.Operation operation,
                          ProjectingInternalRow rowProjection) {
        this.left = left;
        this.right = right;
        this.condition = condition;
        this.matched = matched;
        this.notMatched = notMatched;
        this.notMatchedBySource = notMatchedBySource;
        this.checkCardinality = checkCardinality;
        this.output = output;
        this.operation = operation;
        this.rowProjection = rowProjection;
    }

    @Override
    public synchronized RDD<InternalRow> doExecute() {
        if (result == null) result = probe();
        return result;
    }

    private RDD<InternalRow> probe() {
        MergeBroadcastJoin.Split split = MergeBroadcastJoin.split(condition, left.outputSet(), right.outputSet());
        if (split == null) throw new IllegalStateException("MergeProbe: not a condition with keys: " + condition.sql());
        List<Expression> targetKeys = split.targetKeys();
        boolean[] nullSafe = split.nullSafe();
        MergeBroadcastJoin.KeyPair bounded = footersOn() ? boundedKey(split) : null;
        // the footers are read while the source is collected: neither needs the other until both are done
        MergeFileSkipping.Reading reading = bounded == null ? null
                : operation.readKeyBounds(((AttributeReference) bounded.target()).name());
        try {
            MergeSource source = MergeSource.collect(right);
            UnsafeRow[] rows = source.rows();
            MergeFileSkipping.Bounds bounds = reading == null ? null : reading.get();
            reading = null;
            MergeSourceIndex indexed = MergeSourceIndex.of(rows, split, right.output(), bounded, bounds);
            Set<String> skipped = bounds != null && carriesOverOnly() ? indexed.unmatchedFiles() : Set.of();
            if (!skipped.isEmpty()) operation.skip(skipped);
            BitSet early = indexed.early;
            int[] earlyRows = early.stream().toArray();
            Source shared = new Source(indexed.index, indexed.first, indexed.next, earlyRows, source);
            CollectionAccumulator<BitSet> marks = sparkContext().collectionAccumulator("ushas MERGE: source rows matched");
            MergeInserts inserts = MergeInserts.of(notMatched, left.output(), right.output(), rowProjection,
                    operation.partitionColumns());
            operation.late(new MergeLateRows(rows, early, marks, inserts, rowProjection));
            Broadcast<Source> broadcast = sparkContext().broadcast(shared,
                    scala.reflect.ClassTag$.MODULE$.apply(Source.class));
            Task task = new Task(CollectionConverters.asScala(targetKeys).toList(), nullSafe, left.output(),
                    right.output(), condition, matched, notMatchedBySource, checkCardinality);
            JavaRDD<InternalRow> probed = withoutSkippedParts(left.execute(), skipped).toJavaRDD().mapPartitions(
                    (FlatMapFunction<Iterator<InternalRow>, InternalRow>) it -> task.run(it, broadcast.value(), marks));
            if (earlyRows.length == 0) return probed.rdd();
            // the rows no file can match are the statement's own tasks', beside the target's: a task per 20,000
            int slices = Math.max(1, Math.min(sparkContext().defaultParallelism(), earlyRows.length / 20_000));
            List<Integer> numbers = new java.util.ArrayList<>();
            for (int i = 0; i < slices; i++) numbers.add(i);
            JavaRDD<InternalRow> written = JavaSparkContext.fromSparkContext(sparkContext())
                    .parallelize(numbers, slices)
                    .mapPartitions((FlatMapFunction<Iterator<Integer>, InternalRow>) it -> {
                        Source s = broadcast.value();
                        int slice = it.next();
                        int from = (int) ((long) s.early().length * slice / slices);
                        int to = (int) ((long) s.early().length * (slice + 1) / slices);
                        return inserts.rows(s.source().rows(), s.early(), from, to).iterator();
                    });
            return probed.union(written).rdd();
        } finally {
            if (reading != null) reading.cancel();
        }
    }

    /** {@code rdd} (the group's rows) without the tasks whose files are all {@code skipped}: they would read and
     *  write nothing, and each costs a task (the group's tasks were planned before the source was known). Found
     *  through the one-to-one lineage down to the scan's {@code DataSourceRDD}; {@code rdd} as it is otherwise. */
    static RDD<InternalRow> withoutSkippedParts(RDD<InternalRow> rdd, Set<String> skipped) {
        if (skipped.isEmpty()) return rdd;
        RDD<?> scan = rdd;
        while (!(scan instanceof DataSourceRDD)) {
            Seq<Dependency<?>> deps = scan.dependencies();
            if (deps.size() != 1 || !(deps.head() instanceof OneToOneDependency<?> one)) return rdd;
            scan = one.rdd();
        }
        Partition[] parts = scan.partitions();
        if (parts.length != rdd.partitions().length) return rdd;
        boolean[] keep = new boolean[parts.length];
        boolean any = false;
        for (int i = 0; i < parts.length; i++) {
            keep[i] = !(parts[i] instanceof DataSourceRDDPartition p) || !allSkipped(p, skipped);
            any |= !keep[i];
        }
        if (!any) return rdd;
        return PartitionPruningRDD.create(rdd, new Kept(keep));
    }

    /** Whether the task of a partition index is kept. */
    private static final class Kept extends scala.runtime.AbstractFunction1<Object, Object> implements Serializable {
        private final boolean[] keep;

        Kept(boolean[] keep) {
            this.keep = keep;
        }

        @Override
        public Object apply(Object index) {
            return keep[(Integer) index];
        }
    }

    private static boolean allSkipped(DataSourceRDDPartition part, Set<String> skipped) {
        if (!(part.inputPartition().isDefined() && part.inputPartition().get() instanceof GroupReads.FilePart files)) {
            return false;
        }
        for (org.apache.spark.sql.execution.datasources.PartitionedFile f : files.files()) {
            if (!skipped.contains(f.toPath().toString())) return false;
        }
        return true;
    }

    private static boolean footersOn() {
        return Boolean.parseBoolean(SQLConf.get().getConfString(MergeFileSkipping.CONF, "true").trim());
    }

    /** The first key equality on a plain integer (or date) column of the target's, whose bounds a parquet footer
     *  has: null if none. */
    private static MergeBroadcastJoin.KeyPair boundedKey(MergeBroadcastJoin.Split split) {
        for (MergeBroadcastJoin.KeyPair k : split.keys()) {
            if (!(k.target() instanceof AttributeReference column)) continue;
            if (MergeSourceIndex.IntegerKey.integral(column.dataType())) return k;
        }
        return null;
    }

    /** Whether the statement's only {@code WHEN NOT MATCHED BY SOURCE} instruction is Spark's carry-over. */
    private boolean carriesOverOnly() {
        List<MergeRows.Instruction> bySource = CollectionConverters.asJava(notMatchedBySource);
        return bySource.size() == 1 && bySource.get(0) instanceof MergeRows.Keep keep
                && keep.condition() instanceof Literal l && Boolean.TRUE.equals(l.value());
    }

    /** The source as the tasks read it: its key index, each key's rows as a chain ({@code first} by key, then
     *  {@code next}; -1 ends it), the rows no target row can match ({@code early}: their {@code WHEN NOT MATCHED}
     *  rows are written by tasks of their own), the rows. */
    record Source(MergeUnmatchedSourceExec.KeyIndex index, int[] first, int[] next, int[] early, MergeSource source)
            implements Serializable {
    }

    /** The instructions of one case, bound to the joined row: the first whose condition holds gives its rows. */
    static final class Bound {
        private final BasePredicate[] when;
        private final UnsafeProjection[][] outputs;

        Bound(Seq<MergeRows.Instruction> instructions, Seq<Attribute> schema) {
            List<MergeRows.Instruction> list = CollectionConverters.asJava(instructions);
            when = new BasePredicate[list.size()];
            outputs = new UnsafeProjection[list.size()][];
            for (int i = 0; i < list.size(); i++) {
                when[i] = Predicate.create(list.get(i).condition(), schema);
                when[i].initialize(0);
                List<Seq<Expression>> outs = CollectionConverters.asJava(list.get(i).outputs());
                outputs[i] = new UnsafeProjection[outs.size()];
                for (int j = 0; j < outs.size(); j++) outputs[i][j] = UnsafeProjection.create(outs.get(j), schema);
            }
        }

        /** Adds the rows of {@code row} to {@code out} (copies when {@code copy}: the projections reuse a row). */
        void apply(InternalRow row, ArrayDeque<InternalRow> out, boolean copy) {
            for (int i = 0; i < when.length; i++) {
                if (!when[i].eval(row)) continue;
                for (UnsafeProjection p : outputs[i]) {
                    UnsafeRow r = p.apply(row);
                    out.add(copy ? r.copy() : r);
                }
                return;
            }
        }
    }

    /** What a task runs over its target rows (serializable: expressions and schemas, bound in the task). */
    record Task(Seq<Expression> targetKeys, boolean[] nullSafe, Seq<Attribute> left, Seq<Attribute> right,
                Expression condition, Seq<MergeRows.Instruction> matched,
                Seq<MergeRows.Instruction> notMatchedBySource, boolean checkCardinality) implements Serializable {

        Iterator<InternalRow> run(Iterator<InternalRow> targets, Source source, CollectionAccumulator<BitSet> marks) {
            Seq<Attribute> joined = left.$plus$plus(right).toSeq();
            MergeSourceIndex.IntegerKey direct = MergeSourceIndex.IntegerKey.of(CollectionConverters.asJava(targetKeys), left);
            MergeUnmatchedSourceExec.WordIndex words = direct != null
                    && source.index() instanceof MergeUnmatchedSourceExec.WordIndex w ? w : null;
            UnsafeProjection keyOf = words != null ? null : UnsafeProjection.create(targetKeys, left);
            BasePredicate on = Predicate.create(condition, joined);
            on.initialize(0);
            Bound whenMatched = new Bound(matched, joined);
            Bound whenNotMatched = new Bound(notMatchedBySource, joined);
            UnsafeProjection carryOver = carryOver(notMatchedBySource, left);
            UnsafeRow[] rows = source.source().rows();
            InternalRow nulls = new GenericInternalRow(right.size());
            JoinedRow row = new JoinedRow();
            BitSet seen = new BitSet(rows.length);
            ArrayDeque<InternalRow> pending = new ArrayDeque<>();
            boolean copy = !checkCardinality;  // several matches of one target row each give rows
            return new Iterator<>() {
                private boolean reported;
                /** a target row's one row, when it gives one without a match (the carry-over) */
                private InternalRow kept;

                @Override
                public boolean hasNext() {
                    while (kept == null && pending.isEmpty() && targets.hasNext()) probe(targets.next());
                    if (kept == null && pending.isEmpty() && !reported) {
                        reported = true;
                        marks.add(seen);
                    }
                    return kept != null || !pending.isEmpty();
                }

                @Override
                public InternalRow next() {
                    if (!hasNext()) throw new java.util.NoSuchElementException();
                    InternalRow out = kept;
                    if (out == null) return pending.poll();
                    kept = null;
                    return out;
                }

                private int slot(InternalRow target) {
                    if (words == null) {
                        UnsafeRow key = keyOf.apply(target);
                        return MergeUnmatchedSourceExec.neverMatches(key, nullSafe) ? -1 : source.index().get(key);
                    }
                    if (target.isNullAt(direct.ordinal())) return nullSafe[0] ? words.nullSlot() : -1;
                    return words.getWord(direct.word(direct.read(target)));
                }

                private void probe(InternalRow target) {
                    int slot = slot(target);
                    int matches = 0;
                    for (int i = slot < 0 ? -1 : source.first()[slot]; i >= 0; i = source.next()[i]) {
                        row.apply(target, rows[i]);
                        if (!on.eval(row)) continue;
                        if (++matches > 1 && checkCardinality) {
                            throw org.apache.spark.sql.errors.QueryExecutionErrors.mergeCardinalityViolationError();
                        }
                        seen.set(i);
                        whenMatched.apply(row, pending, copy);
                    }
                    if (matches > 0) return;
                    if (carryOver != null) {
                        kept = carryOver.apply(target);
                    } else {
                        whenNotMatched.apply(row.apply(target, nulls), pending, false);
                    }
                }
            };
        }

        /** The projection of a target row no source row matches, when the statement's only {@code WHEN NOT MATCHED
         *  BY SOURCE} instruction is Spark's carry-over of a copy-on-write (one row, taken from the target row
         *  alone): that row without the joined row and the instruction's condition. Else null. */
        private static UnsafeProjection carryOver(Seq<MergeRows.Instruction> bySource, Seq<Attribute> left) {
            List<MergeRows.Instruction> list = CollectionConverters.asJava(bySource);
            if (list.size() != 1 || !(list.get(0) instanceof MergeRows.Keep keep)
                    || !(keep.condition() instanceof Literal l) || !Boolean.TRUE.equals(l.value())
                    || keep.outputs().size() != 1) {
                return null;
            }
            Seq<Expression> output = keep.outputs().apply(0);
            org.apache.spark.sql.catalyst.expressions.AttributeSet from = org.apache.spark.sql.catalyst.expressions
                    .AttributeSet.apply(CollectionConverters.asScala(new ArrayList<Expression>(CollectionConverters.asJava(left))).toList());
            for (Expression e : CollectionConverters.asJava(output)) {
                if (!e.references().subsetOf(from)) return null;
            }
            return UnsafeProjection.create(output, left);
        }
    }

    @Override
    public Seq<Attribute> output() {
        return output;
    }

    /** The order of its rows within a task, where it can promise one: the target's by partition (the group's scan
     *  reads whole files, a task's in ascending order of their partitions, and reports it), on the output columns
     *  that every {@code WHEN MATCHED} / {@code WHEN NOT MATCHED BY SOURCE} output takes unchanged from the target
     *  row, and that are the partition columns the tasks of {@link MergeInserts} sort their rows by. Spark then drops
     *  the write's sort by the partition columns ({@code RemoveRedundantSorts}): a copy of every row written. */
    @Override
    public Seq<SortOrder> outputOrdering() {
        List<SortOrder> out = new ArrayList<>();
        if (operation == null) return CollectionConverters.asScala(out).toList();
        int[] inserted = MergeInserts.of(notMatched, left.output(), right.output(), rowProjection,
                operation.partitionColumns()).partitionOrdinals();
        List<SortOrder> target = CollectionConverters.asJava(left.outputOrdering());
        for (int k = 0; k < target.size() && k < inserted.length; k++) {
            SortOrder o = target.get(k);
            if (o.direction() != Ascending$.MODULE$ || o.nullOrdering() != NullsFirst$.MODULE$) break;
            if (!keptFromTarget(inserted[k], o.child())) break;
            out.add(new SortOrder(output.apply(inserted[k]), o.direction(), o.nullOrdering(),
                    CollectionConverters.asScala(List.<Expression>of()).toList()));
        }
        return CollectionConverters.asScala(out).toList();
    }

    /** Whether output column {@code j} of every row a target row gives is its {@code column}. */
    private boolean keptFromTarget(int j, Expression column) {
        for (Seq<MergeRows.Instruction> clauses : List.of(matched, notMatchedBySource)) {
            for (MergeRows.Instruction i : CollectionConverters.asJava(clauses)) {
                for (Seq<Expression> row : CollectionConverters.asJava(i.outputs())) {
                    if (!row.apply(j).semanticEquals(column)) return false;
                }
            }
        }
        return true;
    }

    @Override
    public Seq<SparkPlan> children() {
        return CollectionConverters.asScala(List.of(left, right)).toList();
    }

    @Override
    public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
        return new MergeProbeExec(children.apply(0), children.apply(1), condition, matched, notMatched,
                notMatchedBySource, checkCardinality, output, operation, rowProjection);
    }

    @Override
    public String simpleString(int maxFields) {
        return "MergeProbe " + condition.sql() + (checkCardinality ? ", checking cardinality" : "");
    }

    @Override
    public String nodeName() {
        return "MergeProbe";
    }

    @Override
    public int productArity() {
        return 10;
    }

    @Override
    public Object productElement(int n) {
        return switch (n) {
            case 0 -> left;
            case 1 -> right;
            case 2 -> condition;
            case 3 -> matched;
            case 4 -> notMatched;
            case 5 -> notMatchedBySource;
            case 6 -> checkCardinality;
            case 7 -> output;
            case 8 -> operation;
            case 9 -> rowProjection;
            default -> throw new IndexOutOfBoundsException(n);
        };
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof MergeProbeExec;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MergeProbeExec m && left.equals(m.left) && right.equals(m.right)
                && condition.equals(m.condition) && matched.equals(m.matched) && notMatched.equals(m.notMatched)
                && notMatchedBySource.equals(m.notMatchedBySource) && checkCardinality == m.checkCardinality
                && output.equals(m.output) && operation == m.operation;
    }

    @Override
    public int hashCode() {
        return Objects.hash(left, right, condition, matched, notMatched, notMatchedBySource, checkCardinality, output);
    }
}
