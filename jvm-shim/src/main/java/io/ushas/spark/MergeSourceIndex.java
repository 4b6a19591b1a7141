package io.ushas.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

/**
 * The driver's one pass over a MERGE's source rows ({@link MergeProbeExec}): each row's key indexed by the ON
 * condition's key equalities (the rows of a key as a chain: {@code first} by key, then {@code next}; -1 ends it),
 * or the row marked {@code early} when no target row can match it: a NULL in a plain equality, or, with the group's
 * footer {@link MergeFileSkipping.Bounds bounds} of one integer key, a key no file of the group can hold. The pass
 * also marks that key's values against the files' ranges ({@link MergeFileSkipping.Hits}, no sort) for the files to
 * skip ({@link #unmatchedFiles}). A row is a call of {@link #add}: in a
 * new JVM the JIT compiles a method called a few hundred times long before a loop's body (the driver's code runs
 * once a statement), and one key column is read from the row without a projection.
 */
final class MergeSourceIndex {
    final MergeUnmatchedSourceExec.KeyIndex index;
    final int[] first;
    final int[] next;
    final BitSet early;
    private final UnsafeRow[] rows;
    private final boolean[] nullSafe;
    /** the one key, when a column of an integer type: read straight from the row (else {@code keyOf}) */
    private final IntegerKey direct;
    /** the index, when {@code direct} keys are looked up by their word ({@link IntegerKey#word}) */
    private final MergeUnmatchedSourceExec.WordIndex words;
    private final UnsafeProjection keyOf;
    private final UnsafeRowWriter word = new UnsafeRowWriter(1);
    private final UnsafeRow nullKey = new UnsafeRow(1);
    /** the key with bounds: its column (else {@code valueOf}'s first field), whether it is null-safe */
    private final MergeFileSkipping.Bounds bounds;
    private final IntegerKey bounded;
    private final UnsafeProjection valueOf;
    private final boolean boundedNullSafe;
    /** the bounded key's values against the group's files' ranges ({@link MergeFileSkipping.Hits}) */
    private final MergeFileSkipping.Hits hits;
    private boolean nullBoundedKey;

    private MergeSourceIndex(UnsafeRow[] rows, MergeBroadcastJoin.Split split, Seq<Attribute> output,
                             MergeBroadcastJoin.KeyPair boundedKey, MergeFileSkipping.Bounds bounds) {
        this.rows = rows;
        this.nullSafe = split.nullSafe();
        index = MergeUnmatchedSourceExec.KeyIndex.forKeys(split.targetKeys(), rows.length);
        first = new int[rows.length];
        next = new int[rows.length];
        Arrays.fill(first, -1);
        early = new BitSet(rows.length);
        direct = IntegerKey.of(split.sourceKeys(), output);
        words = direct != null && java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN
                && index instanceof MergeUnmatchedSourceExec.WordIndex w ? w : null;  // IntegerKey.word's bytes
        keyOf = direct != null ? null
                : UnsafeProjection.create(CollectionConverters.asScala(split.sourceKeys()).toList(), output);
        nullKey.pointTo(new byte[16], 16);
        nullKey.setNullAt(0);
        this.bounds = boundedKey == null ? null : bounds;
        IntegerKey column = this.bounds == null ? null : IntegerKey.of(List.of(boundedKey.source()), output);
        valueOf = this.bounds == null || column != null ? null
                : UnsafeProjection.create(CollectionConverters.asScala(List.of(boundedKey.source())).toList(), output);
        bounded = this.bounds == null ? null : column != null ? column : new IntegerKey(0, boundedKey.target().dataType());
        boundedNullSafe = boundedKey != null && boundedKey.nullSafe();
        hits = this.bounds == null ? null : this.bounds.hits();
    }

    /** The pass over {@code rows} (of {@code output}); {@code bounds}: those of {@code boundedKey}'s target column in
     *  the group's files, or null. */
    static MergeSourceIndex of(UnsafeRow[] rows, MergeBroadcastJoin.Split split, Seq<Attribute> output,
                               MergeBroadcastJoin.KeyPair boundedKey, MergeFileSkipping.Bounds bounds) {
        MergeSourceIndex out = new MergeSourceIndex(rows, split, output, boundedKey, bounds);
        for (int i = 0; i < rows.length; i++) out.add(i);
        return out;
    }

    /** the paths of the group's files no source key can be in ({@link MergeFileSkipping.Hits#unmatched}; none
     *  without bounds) */
    java.util.Set<String> unmatchedFiles() {
        return hits == null ? java.util.Set.of() : hits.unmatched(nullBoundedKey);
    }

    private void add(int i) {
        UnsafeRow row = rows[i];
        next[i] = -1;
        if (words != null) {  // the key's word, without a key row
            boolean isNull = row.isNullAt(direct.ordinal());
            if (isNull && !nullSafe[0]) {  // a NULL in a plain equality
                early.set(i);
            } else {
                int slot = isNull ? words.addNull() : words.addWord(direct.word(direct.read(row)));
                next[i] = first[slot];
                first[slot] = i;
            }
            if (bounds != null) bound(i, valueOf == null ? row : valueOf.apply(row));
            return;
        }
        UnsafeRow key;
        if (direct == null) {
            key = keyOf.apply(row);
        } else if (row.isNullAt(direct.ordinal())) {
            key = nullKey;
        } else {
            word.reset();
            word.zeroOutNullBytes();
            direct.write(word, direct.read(row));
            key = word.getRow();
        }
        if (MergeUnmatchedSourceExec.neverMatches(key, nullSafe)) {  // a NULL in a plain equality
            early.set(i);
        } else {
            int slot = index.add(key);
            next[i] = first[slot];
            first[slot] = i;
        }
        if (bounds != null) bound(i, valueOf == null ? row : valueOf.apply(row));
    }

    private void bound(int i, InternalRow value) {
        if (value.isNullAt(bounded.ordinal())) {
            nullBoundedKey |= boundedNullSafe;
            if (!bounds.mayHoldNull()) early.set(i);
            return;
        }
        if (!hits.add(bounded.read(value))) early.set(i);
    }

    /** A key of an integer type (or date) at {@code ordinal} of a row: read as a long, written as a key row's. */
    record IntegerKey(int ordinal, DataType type) {
        /** For {@code keys} that are one column of {@code output} of such a type; else null. */
        static IntegerKey of(List<Expression> keys, Seq<Attribute> output) {
            if (keys.size() != 1 || !(keys.get(0) instanceof AttributeReference a) || !integral(a.dataType())) return null;
            List<Attribute> columns = CollectionConverters.asJava(output);
            for (int i = 0; i < columns.size(); i++) {
                if (columns.get(i).exprId().equals(a.exprId())) return new IntegerKey(i, a.dataType());
            }
            return null;
        }

        static boolean integral(DataType type) {
            return type instanceof LongType || type instanceof IntegerType || type instanceof ShortType
                    || type instanceof ByteType || type instanceof DateType;
        }

        long read(InternalRow row) {
            return type instanceof LongType ? row.getLong(ordinal) : type instanceof ShortType ? row.getShort(ordinal)
                    : type instanceof ByteType ? row.getByte(ordinal) : row.getInt(ordinal);
        }

        /** The 8-byte word of {@code v} in a one-field key row ({@link #write}: the value's bytes, the rest zero),
         *  as {@code UnsafeRow.getLong(0)} reads it. */
        long word(long v) {
            return type instanceof LongType ? v : type instanceof ShortType ? v & 0xFFFFL
                    : type instanceof ByteType ? v & 0xFFL : v & 0xFFFFFFFFL;
        }

        /** Writes {@code v} as field 0 of a one-field key row (the bytes Spark's projection writes). */
        void write(UnsafeRowWriter w, long v) {
            if (type instanceof LongType) {
                w.write(0, v);
            } else if (type instanceof ShortType) {
                w.write(0, (short) v);
            } else if (type instanceof ByteType) {
                w.write(0, (byte) v);
            } else {
                w.write(0, (int) v);
            }
        }
    }
}
