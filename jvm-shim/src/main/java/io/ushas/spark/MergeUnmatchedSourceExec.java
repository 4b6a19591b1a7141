package io.ushas.spark;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Predicate;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.io.Serializable;

/**
 * {@link MergeUnmatchedSource} planned: the MERGE's source rows no target row matches, with one Spark job over
 * the target's key columns and no shuffle or broadcast exchange. It collects the source (small: the rule only
 * makes this node for a source it broadcasts anyway), gives each distinct key of the source rows whose own
 * conjuncts hold an index (a key with a NULL in a plain {@code =} equality never matches: it gets none), broadcasts
 * that map of keys, and runs one job over {@code left} (the target's key columns, its own conjuncts applied):
 * each task sets, in a bit set, the index of every key it meets, and the bit sets are OR-ed on the driver. The
 * answer is the source rows without an index or whose index no task set, as a small local RDD. Keys are compared
 * as the bytes of their {@code UnsafeRow}: the rule makes this node only for key types whose equality is their
 * bytes' (no floating point, no collation but binary; both sides of an equality of the same type), where a NULL
 * compares equal to a NULL, which is what {@code <=>} means. {@code Join(right, left, LeftAnti, condition)}'s
 * rows, without that join's exchange of {@code left}.
 */
public final class MergeUnmatchedSourceExec extends SparkPlan {
    private final SparkPlan left;
    private final SparkPlan right;
    private final Expression condition;
    private final boolean checkCardinality;
    private transient RDD<InternalRow> result;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public MergeUnmatchedSourceExec(SparkPlan left, SparkPlan right, Expression condition, boolean checkCardinality) {
        this.left = left;
        this.right = right;
        this.condition = condition;
        this.checkCardinality = checkCardinality;
    }

    @Override
    public synchronized RDD<InternalRow> doExecute() {
        if (result == null) result = unmatched();
        return result;
    }

    private RDD<InternalRow> unmatched() {
        MergeBroadcastJoin.Split split = MergeBroadcastJoin.split(condition, left.outputSet(), right.outputSet());
        if (split == null || !split.targetOnly().isEmpty()) {
            throw new IllegalStateException("MergeUnmatchedSource: not a condition of keys: " + condition.sql());
        }
        List<Expression> targetKeys = split.targetKeys();
        List<Expression> sourceKeys = split.sourceKeys();
        boolean[] nullSafe = split.nullSafe();
        InternalRow[] rows = right.executeCollect();
        UnsafeProjection keyOf = UnsafeProjection.create(CollectionConverters.asScala(sourceKeys).toList(), right.output());
        BasePredicate own = null;
        if (!split.sourceOnly().isEmpty()) {
            Expression all = split.sourceOnly().stream().reduce(And::new).get();
            own = Predicate.create(all, right.output());
            own.initialize(0);
        }
        KeyIndex index = KeyIndex.forKeys(targetKeys, rows.length);
        int[] slot = new int[rows.length];
        BitSet repeated = new BitSet();  // the keys of more than one source row
        for (int i = 0; i < rows.length; i++) {
            slot[i] = -1;
            if (own != null && !own.eval(rows[i])) continue;  // its own conjuncts fail: it matches nothing
            UnsafeRow key = keyOf.apply(rows[i]);
            if (neverMatches(key, nullSafe)) continue;
            int before = index.size();
            slot[i] = index.add(key);
            if (slot[i] < before) repeated.set(slot[i]);
        }
        index.seal();
        BitSet hit = index.size() == 0 ? new BitSet()
                : hits(left.execute(), sparkContext().broadcast(index, scala.reflect.ClassTag$.MODULE$.apply(KeyIndex.class)),
                CollectionConverters.asScala(targetKeys).toList(), left.output(), nullSafe, index.size());
        // a target row whose key two source rows have matches both of them (the rows of left are exactly the target
        // rows that satisfy the target's conjuncts): Spark's error, raised by the write's tasks as MergeRows raises
        // it (so the write is aborted as it is then), none of this node's rows written
        boolean violation = checkCardinality && hit.intersects(repeated);
        UnsafeProjection unsafe = UnsafeProjection.create(right.schema());
        List<UnsafeRow> out = new ArrayList<>();
        for (int i = 0; i < rows.length && !violation; i++) {
            if (slot[i] < 0 || !hit.get(slot[i])) {
                out.add(rows[i] instanceof UnsafeRow u ? u : unsafe.apply(rows[i]).copy());
            }
        }
        int slices = Math.max(1, Math.min(sparkContext().defaultParallelism(), out.size() / 10_000));
        List<byte[]> chunks = new ArrayList<>();
        for (int c = 0; c < slices; c++) chunks.add(pack(out.subList(out.size() * c / slices, out.size() * (c + 1) / slices)));
        int fields = right.output().size();
        JavaRDD<InternalRow> unpacked = JavaSparkContext.fromSparkContext(sparkContext()).parallelize(chunks, slices)
                .mapPartitions((FlatMapFunction<Iterator<byte[]>, InternalRow>) it -> {
                    if (violation) throw org.apache.spark.sql.errors.QueryExecutionErrors.mergeCardinalityViolationError();
                    return unpack(it, fields);
                });
        return unpacked.rdd();
    }

    /** The rows as one array of bytes: each row's size, then its bytes (an object a slice, not one a row, for the
     *  task's serialization). */
    static byte[] pack(List<UnsafeRow> rows) {
        int total = 0;
        for (UnsafeRow r : rows) total += 4 + r.getSizeInBytes();
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate(total);
        for (UnsafeRow r : rows) {
            buf.putInt(r.getSizeInBytes());
            buf.put(r.getBytes());
        }
        return buf.array();
    }

    /** The rows of {@link #pack}'s arrays, one row object re-pointed along each array (as Spark's own readers). */
    static Iterator<InternalRow> unpack(Iterator<byte[]> chunks, int fields) {
        return new Iterator<>() {
            private final UnsafeRow row = new UnsafeRow(fields);
            private byte[] chunk = new byte[0];
            private int at;

            @Override
            public boolean hasNext() {
                while (at >= chunk.length) {
                    if (!chunks.hasNext()) return false;
                    chunk = chunks.next();
                    at = 0;
                }
                return true;
            }

            @Override
            public InternalRow next() {
                if (!hasNext()) throw new java.util.NoSuchElementException();
                int size = java.nio.ByteBuffer.wrap(chunk, at, 4).getInt();
                row.pointTo(chunk, org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET + at + 4, size);
                at += 4 + size;
                return row;
            }
        };
    }

    /** Whether a key has a NULL in a plain equality (which never holds). */
    static boolean neverMatches(UnsafeRow key, boolean[] nullSafe) {
        for (int i = 0; i < nullSafe.length; i++) {
            if (!nullSafe[i] && key.isNullAt(i)) return true;
        }
        return false;
    }

    /** The indexes of the keys of {@code index} that some row of {@code keys} has: one job, a bit set a task. */
    private static BitSet hits(RDD<InternalRow> keys, Broadcast<KeyIndex> index, Seq<Expression> exprs,
                               Seq<Attribute> schema, boolean[] nullSafe, int size) {
        JavaRDD<BitSet> bits = keys.toJavaRDD().mapPartitions((FlatMapFunction<Iterator<InternalRow>, BitSet>) rows -> {
            UnsafeProjection keyOf = UnsafeProjection.create(exprs, schema);
            KeyIndex known = index.value();
            BitSet seen = new BitSet(size);
            while (rows.hasNext()) {
                UnsafeRow key = keyOf.apply(rows.next());
                if (neverMatches(key, nullSafe)) continue;
                int at = known.get(key);
                if (at >= 0) seen.set(at);
            }
            return List.of(seen).iterator();
        });
        BitSet all = new BitSet(size);
        for (BitSet b : bits.collect()) all.or(b);
        index.destroy();
        return all;
    }

    /** The source's distinct keys, each with its index (0, 1, …, in the order added). Broadcast: serializable. */
    interface KeyIndex extends Serializable {
        /** An empty index for ``keys`` (one fixed-width key: {@link WordIndex}, else {@link RowIndex}) of about
         *  {@code capacity} keys. */
        static KeyIndex forKeys(List<Expression> keys, int capacity) {
            return keys.size() == 1 && UnsafeRow.isFixedLength(keys.get(0).dataType()) ? new WordIndex(capacity)
                    : new RowIndex();
        }

        /** the key's index, added if new (the row may be reused by the caller) */
        int add(UnsafeRow key);

        /** the key's index, or -1 */
        int get(UnsafeRow key);

        int size();

        /** After the last {@link #add}, before the index is looked up or broadcast. */
        default void seal() {
        }
    }

    /** Any keys, as rows compared by their bytes. */
    static final class RowIndex implements KeyIndex {
        private final HashMap<UnsafeRow, Integer> index = new HashMap<>();

        @Override
        public int add(UnsafeRow key) {
            Integer at = index.get(key);
            if (at == null) {
                at = index.size();
                index.put(key.copy(), at);
            }
            return at;
        }

        @Override
        public int get(UnsafeRow key) {
            Integer at = index.get(key);
            return at == null ? -1 : at;
        }

        @Override
        public int size() {
            return index.size();
        }
    }

    /**
     * One key of a fixed-width type, as the 8 bytes of its slot in the row (zero-filled around a narrower
     * value, so the same value always gives the same word): an open-addressing table of primitive arrays, which
     * serializes as a few arrays where a map of rows would serialize an object per key. A NULL key (of a
     * {@code <=>}) has its own index.
     */
    static final class WordIndex implements KeyIndex {
        /** the widest span of words {@link #seal} makes a bitmap of, in bits per key */
        static final int BITS_PER_KEY = 32;
        private final long[] words;
        private final int[] slots;  // index + 1; 0: empty
        private final int mask;
        private int nullAt = -1;
        private int size;

        /** {@link #seal}'s bitmap of the words added (bit {@code w - low}), checked before the table; null: none */
        private long[] present;
        /** the smallest and the largest word added (signed), when {@code present} is not null */
        private long low;
        private long high;

        WordIndex(int capacity) {
            int n = Integer.highestOneBit(Math.max(4, capacity) * 2 - 1) << 1;
            words = new long[n];
            slots = new int[n];
            mask = n - 1;
        }

        private int home(long w) {
            long h = w * 0x9E3779B97F4A7C15L;
            return (int) (h ^ (h >>> 32)) & mask;
        }

        @Override
        public int add(UnsafeRow key) {
            return key.isNullAt(0) ? addNull() : addWord(key.getLong(0));
        }

        /** The slot of the NULL key, added if new. */
        int addNull() {
            if (nullAt < 0) nullAt = size++;
            return nullAt;
        }

        /** The slot of the key whose row's 8-byte word is {@code w}, added if new. */
        int addWord(long w) {
            int h = home(w);
            while (slots[h] != 0) {
                if (words[h] == w) return slots[h] - 1;
                h = (h + 1) & mask;
            }
            words[h] = w;
            slots[h] = ++size;
            present = null;  // sealed again after the last key
            return size - 1;
        }

        /** After the last key: when the words span at most {@value #BITS_PER_KEY} bits a key (at least 2^16), a
         *  bitmap of them over that span. A key no source row has (most target rows of a MERGE) is then one read of
         *  the bitmap, near the last one when the keys come in order (a table's ids, dates), where the table's
         *  hash sends each key to another cache line: two misses of a table larger than the core's cache. */
        @Override
        public void seal() {
            present = null;
            long min = Long.MAX_VALUE;
            long max = Long.MIN_VALUE;
            for (int h = 0; h < words.length; h++) {
                if (slots[h] == 0) continue;
                min = Math.min(min, words[h]);
                max = Math.max(max, words[h]);
            }
            long span = max - min;  // negative when no word was added, or when the span overflows
            if (span < 0 || span >= Math.max(1L << 16, (long) BITS_PER_KEY * size)) return;
            long[] bits = new long[(int) (span >>> 6) + 1];
            for (int h = 0; h < words.length; h++) {
                if (slots[h] == 0) continue;
                long d = words[h] - min;
                bits[(int) (d >>> 6)] |= 1L << d;
            }
            low = min;
            high = max;
            present = bits;
        }

        @Override
        public int get(UnsafeRow key) {
            return key.isNullAt(0) ? nullAt : getWord(key.getLong(0));
        }

        /** The slot of the key whose row's 8-byte word is {@code w} ({@code IntegerKey.word}), or -1. */
        int getWord(long w) {
            long[] bits = present;
            if (bits != null) {
                if (w < low || w > high) return -1;
                long d = w - low;
                if ((bits[(int) (d >>> 6)] & (1L << d)) == 0) return -1;
            }
            int h = home(w);
            while (slots[h] != 0) {
                if (words[h] == w) return slots[h] - 1;
                h = (h + 1) & mask;
            }
            return -1;
        }

        /** The slot of the NULL key, or -1. */
        int nullSlot() {
            return nullAt;
        }

        @Override
        public int size() {
            return size;
        }
    }

    @Override
    public Seq<Attribute> output() {
        return right.output();
    }

    @Override
    public Seq<SparkPlan> children() {
        return CollectionConverters.asScala(List.of(left, right)).toList();
    }

    @Override
    public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
        return new MergeUnmatchedSourceExec(children.apply(0), children.apply(1), condition, checkCardinality);
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
        return that instanceof MergeUnmatchedSourceExec;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MergeUnmatchedSourceExec m && left.equals(m.left) && right.equals(m.right)
                && condition.equals(m.condition) && checkCardinality == m.checkCardinality;
    }

    @Override
    public int hashCode() {
        return Objects.hash(left, right, condition, checkCardinality);
    }
}
