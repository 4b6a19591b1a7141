package io.ushas.spark;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.LeafExecNode;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The physical plan of MSCK REPAIR TABLE / ALTER TABLE RECOVER PARTITIONS on an Ushas table: runs
 * {@link PartitionRepair} once when collected (Spark executes commands eagerly with
 * {@code executeCollect}) and outputs no rows, like Spark's own command; what it did is in its SQL
 * metrics (added, dropped, invalid directories, partition directories found) and the driver log.
 */
public final class RepairTableExec extends SparkPlan implements LeafExecNode {
    private final transient UshasCatalog catalog;
    private final Identifier ident;
    private final boolean add;
    private final boolean drop;
    private final String statement;
    private final Map<String, SQLMetric> metrics = new LinkedHashMap<>();
    private transient boolean done;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public RepairTableExec(UshasCatalog catalog, Identifier ident, boolean add, boolean drop, String statement) {
        this.catalog = catalog;
        this.ident = ident;
        this.add = add;
        this.drop = drop;
        this.statement = statement;
        for (String m : new String[] {"numListedDirectories", "numAddedPartitions", "numDroppedPartitions",
                "numInvalidDirectories"}) {
            metrics.put(m, SQLMetrics.createMetric(sparkContext(), m));
        }
    }

    @Override
    public InternalRow[] executeCollect() {
        run();
        return new InternalRow[0];
    }

    @Override
    public RDD<InternalRow> doExecute() {
        run();
        return sparkContext().emptyRDD(scala.reflect.ClassTag$.MODULE$.apply(InternalRow.class));
    }

    private synchronized void run() {
        if (done) return;
        PartitionRepair.Result r = new PartitionRepair(session(), catalog, ident, add, drop, statement).run();
        done = true;
        metrics.get("numListedDirectories").set(r.listed);
        metrics.get("numAddedPartitions").set(r.added);
        metrics.get("numDroppedPartitions").set(r.dropped);
        metrics.get("numInvalidDirectories").set(r.invalid);
        String executionId = sparkContext().getLocalProperty("spark.sql.execution.id");
        if (executionId != null) {
            SQLMetrics.postDriverMetricUpdates(sparkContext(), executionId,
                    scala.jdk.javaapi.CollectionConverters.asScala(new java.util.ArrayList<>(metrics.values())).toList());
        }
    }

    @Override
    public scala.collection.immutable.Map<String, SQLMetric> metrics() {
        return scala.collection.immutable.Map$.MODULE$.from(scala.jdk.javaapi.CollectionConverters.asScala(metrics));
    }

    @Override
    public Seq<Attribute> output() {
        return scala.collection.immutable.List$.MODULE$.empty();
    }

    @Override
    public Seq<SparkPlan> children() {
        return scala.collection.immutable.List$.MODULE$.empty();
    }

    @Override
    public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
        return this;
    }

    @Override
    public String simpleString(int maxFields) {
        return "UshasRepairTable " + catalog.name() + "." + ident + " [" + (add ? "ADD" : "") + (add && drop ? "," : "")
                + (drop ? "DROP" : "") + "]";
    }

    @Override
    public String nodeName() {
        return "UshasRepairTable";
    }

    @Override
    public int productArity() {
        return 5;
    }

    @Override
    public Object productElement(int n) {
        return switch (n) {
            case 0 -> catalog;
            case 1 -> ident;
            case 2 -> add;
            case 3 -> drop;
            case 4 -> statement;
            default -> throw new IndexOutOfBoundsException(n);
        };
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof RepairTableExec;
    }
}
