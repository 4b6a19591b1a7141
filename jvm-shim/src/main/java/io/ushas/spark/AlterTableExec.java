package io.ushas.spark;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.execution.LeafExecNode;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

import java.util.Arrays;

/**
 * The physical plan of an ALTER TABLE statement Spark refuses for every V2 table but an Ushas table can do as
 * table changes: {@code ALTER TABLE t SET SERDEPROPERTIES (k = v, …)} sets the table's storage properties (its
 * {@code OPTIONS}, what the session catalog's data source tables keep their serde properties as). Applies the
 * changes once when collected, in one catalog call, and outputs no rows. Planned by {@link UshasExtensions}.
 */
public final class AlterTableExec extends SparkPlan implements LeafExecNode {
    private final transient UshasCatalog catalog;
    private final Identifier ident;
    private final TableChange[] changes;
    private final String statement;
    private transient boolean done;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public AlterTableExec(UshasCatalog catalog, Identifier ident, TableChange[] changes, String statement) {
        this.catalog = catalog;
        this.ident = ident;
        this.changes = changes;
        this.statement = statement;
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
        catalog.alterTable(ident, changes);
        catalog.invalidateTable(ident);
        done = true;
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
        return "UshasAlterTable " + catalog.name() + "." + ident + " " + statement + " " + Arrays.toString(changes);
    }

    @Override
    public String nodeName() {
        return "UshasAlterTable";
    }

    @Override
    public int productArity() {
        return 4;
    }

    @Override
    public Object productElement(int n) {
        return switch (n) {
            case 0 -> catalog;
            case 1 -> ident;
            case 2 -> changes;
            case 3 -> statement;
            default -> throw new IndexOutOfBoundsException(n);
        };
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof AlterTableExec;
    }
}
