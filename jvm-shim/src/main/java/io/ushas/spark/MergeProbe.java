package io.ushas.spark;

import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeRows;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

import java.util.List;

/**
 * A MERGE's join and {@code MergeRows} in one node, for a small source (docs/row-level.md, "the probe form"):
 * {@code left} is the group's rows as the statement reads them (Spark's projection marking them
 * {@code __row_from_target}), {@code right} the source (marked {@code __row_from_source}), {@code condition} the ON
 * condition, the instructions and output those of the statement's {@code MergeRows}. Its rows are the rows
 * {@code MergeRows(Join(left, right, FullOuter, condition))} gives for every target row, and those of the source rows
 * no file of the group can match ({@code WHEN NOT MATCHED}); the rows of the other source rows no target row matches
 * are not among them: {@link MergeProbeExec} learns which those are from the tasks that read the target, and the
 * statement's write writes them after those tasks, in the same commit ({@link MergeLateRows}). Made by {@link MergeBroadcastJoin} under the statement's
 * {@code ReplaceData} (whose write it hands them to through {@code operation}), planned by {@link UshasExtensions}.
 */
public final class MergeProbe extends LogicalPlan {
    private final LogicalPlan left;
    private final LogicalPlan right;
    private final Expression condition;
    private final Seq<MergeRows.Instruction> matched;
    private final Seq<MergeRows.Instruction> notMatched;
    private final Seq<MergeRows.Instruction> notMatchedBySource;
    private final boolean checkCardinality;
    private final Seq<Attribute> output;
    private final transient UshasRowLevel.Operation operation;  // the driver's (a plan may be serialized)
    private final ProjectingInternalRow rowProjection;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public MergeProbe(LogicalPlan left, LogicalPlan right, Expression condition, Seq<MergeRows.Instruction> matched,
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

    public LogicalPlan left() {
        return left;
    }

    public LogicalPlan right() {
        return right;
    }

    public Expression condition() {
        return condition;
    }

    public Seq<MergeRows.Instruction> matched() {
        return matched;
    }

    public Seq<MergeRows.Instruction> notMatched() {
        return notMatched;
    }

    public Seq<MergeRows.Instruction> notMatchedBySource() {
        return notMatchedBySource;
    }

    /** whether a target row that two source rows match is the MERGE's {@code MERGE_CARDINALITY_VIOLATION} */
    public boolean checkCardinality() {
        return checkCardinality;
    }

    public UshasRowLevel.Operation operation() {
        return operation;
    }

    /** the statement's {@code ReplaceData} projection of this node's rows to the table's columns (what its write
     *  writes) */
    public ProjectingInternalRow rowProjection() {
        return rowProjection;
    }

    @Override
    public Seq<Attribute> output() {
        return output;
    }

    @Override
    public AttributeSet producedAttributes() {
        @SuppressWarnings({"unchecked", "rawtypes"})
        scala.collection.Iterable<Expression> all = (scala.collection.Iterable) output;
        return AttributeSet.apply(all);
    }

    @Override
    public AttributeSet references() {
        return left.outputSet().$plus$plus(right.outputSet());
    }

    @Override
    public Seq<LogicalPlan> children() {
        return scala.jdk.javaapi.CollectionConverters.asScala(List.of(left, right)).toList();
    }

    @Override
    public LogicalPlan withNewChildrenInternal(IndexedSeq<LogicalPlan> children) {
        return new MergeProbe(children.apply(0), children.apply(1), condition, matched, notMatched, notMatchedBySource,
                checkCardinality, output, operation, rowProjection);
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
        return that instanceof MergeProbe;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MergeProbe m && left.equals(m.left) && right.equals(m.right)
                && condition.equals(m.condition) && matched.equals(m.matched) && notMatched.equals(m.notMatched)
                && notMatchedBySource.equals(m.notMatchedBySource) && checkCardinality == m.checkCardinality
                && output.equals(m.output) && operation == m.operation;
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(left, right, condition, matched, notMatched, notMatchedBySource,
                checkCardinality, output);
    }
}
