package io.ushas.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
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
    /** the one key, when a column of an integer type: read straight from the row and indexed by its word in
     *  {@code words} (else null, and {@code keyOf} projects the key row) */
    private final IntegerKey direct;
    private final MergeUnmatchedSourceExec.WordIndex words;
    private final UnsafeProjection keyOf;
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
        IntegerKey key = IntegerKey.of(split.sourceKeys(), output);
        words = key != null && index instanceof MergeUnmatchedSourceExec.WordIndex w ? w : null;
        direct = words != null ? key : null;
        keyOf = direct != null ? null
                : UnsafeProjection.create(CollectionConverters.asScala(split.sourceKeys()).toList(), output);
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
        out.index.seal();
        return out;
    }

    /** the paths of the group's files no source key can be in ({@link MergeFileSkipping.Hits#unmatched}; none
     *  without bounds) */
    java.util.Set<String> unmatchedFiles() {
        return hits == null ? java.util.Set.of() : hits.unmatched(nullBoundedKey);
    }

    private void add(int i) {
        UnsafeRow row = rows[i];
        int slot = slot(row);
        if (slot < 0) {  // a NULL in a plain equality
            next[i] = -1;
            early.set(i);
        } else {
            next[i] = first[slot];
            first[slot] = i;
        }
        if (bounds != null) bound(i, valueOf == null ? row : valueOf.apply(row));
    }

    /** The index slot of {@code row}'s key, added if new; -1 for a NULL in a plain equality (it matches nothing). */
    private int slot(UnsafeRow row) {
        if (direct != null) {  // the key's word, without a key row
            if (!row.isNullAt(direct.ordinal())) return words.addWord(direct.word(direct.read(row)));
            return nullSafe[0] ? words.addNull() : -1;
        }
        UnsafeRow key = keyOf.apply(row);
        return MergeUnmatchedSourceExec.neverMatches(key, nullSafe) ? -1 : index.add(key);
    }

    private void bound(int i, InternalRow value) {
        if (value.isNullAt(bounded.ordinal())) {
            nullBoundedKey |= boundedNullSafe;
            if (!bounds.mayHoldNull()) early.set(i);
            return;
        }
        if (!hits.add(bounded.read(value))) early.set(i);
    }

    /** A key of an integer type (or date) at {@code ordinal} of a row: read as a long, indexed by its key row's word. */
    record IntegerKey(int ordinal, DataType type) {
        private static final boolean LITTLE_ENDIAN = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;

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

        /** The 8-byte word of {@code v} in a one-field key row (Spark's projection writes the value's bytes at the
         *  field's start, the rest zero), as {@code UnsafeRow.getLong(0)} reads it in this machine's byte order. */
        long word(long v) {
            if (type instanceof LongType) return v;
            int bits = type instanceof ShortType ? 16 : type instanceof ByteType ? 8 : 32;
            long value = v & ((1L << bits) - 1);
            return LITTLE_ENDIAN ? value : value << (64 - bits);
        }
    }
}
