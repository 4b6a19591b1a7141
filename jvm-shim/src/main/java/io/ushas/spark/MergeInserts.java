package io.ushas.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.InterpretedOrdering$;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.MergeRows;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@code WHEN NOT MATCHED} rows of a MERGE planned as {@link MergeProbe}: source rows no target row matches, each
 * through the instructions with its target side NULL (as the full outer join gives it), in the rows of the statement's
 * {@code MergeRows}, grouped by the table's partition (a writer writes one partition's rows at a time). Serializable:
 * a task of the statement's job makes those of the source rows no file of the group can match
 * ({@link MergeProbeExec}), the write's commit those of the rows no task matched ({@link MergeLateRows}).
 *
 * @param partition the partition columns, bound to the rows of {@code MergeRows}
 */
record MergeInserts(Seq<MergeRows.Instruction> notMatched, Seq<Attribute> left, Seq<Attribute> right,
                    Seq<Expression> partition) implements Serializable {

    /** For the instructions of a statement whose write projects its rows with {@code rowProjection}. */
    static MergeInserts of(Seq<MergeRows.Instruction> notMatched, Seq<Attribute> left, Seq<Attribute> right,
                           ProjectingInternalRow rowProjection, List<String> partitionColumns) {
        List<StructField> fields = List.of(rowProjection.schema().fields());
        List<Expression> partition = new ArrayList<>();
        for (String p : partitionColumns) {
            for (int i = 0; i < fields.size(); i++) {
                if (fields.get(i).name().toLowerCase(Locale.ROOT).equals(p.toLowerCase(Locale.ROOT))) {
                    int at = (Integer) rowProjection.colOrdinals().apply(i);
                    partition.add(new BoundReference(at, fields.get(i).dataType(), fields.get(i).nullable()));
                }
            }
        }
        return new MergeInserts(notMatched, left, right, CollectionConverters.asScala(partition).toList());
    }

    /** The ordinals of the partition columns in the rows of {@code MergeRows}, in the table's order. */
    int[] partitionOrdinals() {
        return CollectionConverters.asJava(partition).stream().mapToInt(e -> ((BoundReference) e).ordinal()).toArray();
    }

    /** The rows of source rows {@code rows[which[from]]} … {@code rows[which[to - 1]]}, copied, by partition, the
     *  partitions in ascending order (nulls first: what {@link MergeProbeExec#outputOrdering} reports of them). */
    List<InternalRow> rows(UnsafeRow[] rows, int[] which, int from, int to) {
        MergeProbeExec.Bound insert = new MergeProbeExec.Bound(notMatched, left.$plus$plus(right).toSeq());
        UnsafeProjection partitionOf = UnsafeProjection.create(partition);
        List<DataType> types = new ArrayList<>();
        for (Expression p : CollectionConverters.asJava(partition)) types.add(p.dataType());
        scala.math.Ordering<InternalRow> order = InterpretedOrdering$.MODULE$.forSchema(
                CollectionConverters.asScala(types).toList());
        Map<UnsafeRow, List<InternalRow>> byPartition = new TreeMap<>(order::compare);
        InternalRow nulls = new GenericInternalRow(left.size());
        JoinedRow row = new JoinedRow();
        ArrayDeque<InternalRow> given = new ArrayDeque<>();
        for (int k = from; k < to; k++) {
            insert.apply(row.apply(nulls, rows[which[k]]), given, true);
            for (InternalRow r : given) {
                byPartition.computeIfAbsent(partitionOf.apply(r).copy(), p -> new ArrayList<>()).add(r);
            }
            given.clear();
        }
        List<InternalRow> out = new ArrayList<>();
        for (List<InternalRow> part : byPartition.values()) out.addAll(part);
        return out;
    }
}
