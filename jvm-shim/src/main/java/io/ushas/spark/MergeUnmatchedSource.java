package io.ushas.spark;

import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

import java.util.List;

/**
 * The source rows of a MERGE that no target row matches, found by one scan of the target's key columns
 * (docs/row-level.md): {@code left} is the target's key columns (the rows the target's own conjuncts of the ON
 * condition keep, each key aliased {@code __ushas_merge_key_<i>}), {@code right} the MERGE's source,
 * {@code condition} the key equalities ({@code __ushas_merge_key_<i> = s} or {@code <=>}) and the source's own
 * conjuncts. Its rows are {@code right}'s rows for which no row of {@code left} satisfies {@code condition}, as
 * {@code Join(right, left, LeftAnti, condition)} would give them, without that join's broadcast or shuffle of
 * {@code left}: {@link MergeUnmatchedSourceExec} collects the source, runs one job over {@code left} that marks
 * the source keys it meets in a bit set, and answers the others. Made by {@link MergeBroadcastJoin}, planned by
 * {@link UshasExtensions}.
 */
public final class MergeUnmatchedSource extends LogicalPlan {
    private final LogicalPlan left;
    private final LogicalPlan right;
    private final Expression condition;
    private final boolean checkCardinality;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public MergeUnmatchedSource(LogicalPlan left, LogicalPlan right, Expression condition, boolean checkCardinality) {
        this.left = left;
        this.right = right;
        this.condition = condition;
        this.checkCardinality = checkCardinality;
    }

    /** whether a row of {@code left} meeting the key of two source rows (whose own conjuncts hold) is the MERGE's
     *  {@code MERGE_CARDINALITY_VIOLATION} (the check its {@code MergeRows} then leaves out) */
    public boolean checkCardinality() {
        return checkCardinality;
    }

    public LogicalPlan left() {
        return left;
    }

    public LogicalPlan right() {
        return right;
    }

    public Expression condition() {
        return condition;
    }

    @Override
    public Seq<Attribute> output() {
        return right.output();
    }

    @Override
    public AttributeSet references() {
        return condition.references().$plus$plus(right.outputSet());
    }

    @Override
    public Seq<LogicalPlan> children() {
        return scala.jdk.javaapi.CollectionConverters.asScala(List.of(left, right)).toList();
    }

    @Override
    public LogicalPlan withNewChildrenInternal(IndexedSeq<LogicalPlan> children) {
        return new MergeUnmatchedSource(children.apply(0), children.apply(1), condition, checkCardinality);
    }

    @Override
    public String simpleString(int maxFields) {
        return "MergeUnmatchedSource " + condition.sql() + (checkCardinality ? ", checking cardinality" : "");
    }

    @Override
    public String nodeName() {
        return "MergeUnmatchedSource";
    }

    @Override
    public int productArity() {
        return 4;
    }

    @Override
    public Object productElement(int n) {
        return switch (n) {
            case 0 -> left;
            case 1 -> right;
            case 2 -> condition;
            case 3 -> checkCardinality;
            default -> throw new IndexOutOfBoundsException(n);
        };
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof MergeUnmatchedSource;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MergeUnmatchedSource m && left.equals(m.left) && right.equals(m.right)
                && condition.equals(m.condition) && checkCardinality == m.checkCardinality;
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(left, right, condition, checkCardinality);
    }
}
