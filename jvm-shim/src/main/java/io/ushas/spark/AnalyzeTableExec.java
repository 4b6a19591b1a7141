package io.ushas.spark;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.LeafExecNode;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The physical plan of ANALYZE TABLE t [PARTITION (…)] COMPUTE STATISTICS [NOSCAN | FOR COLUMNS … | FOR ALL
 * COLUMNS] on an Ushas table, which Spark refuses for every V2 table: runs the catalog's
 * {@code analyze_table} procedure once when collected (a partition spec: the row counts of the partitions it
 * matches; FOR COLUMNS: those columns' statistics; else the table's row count) and outputs no rows, like
 * Spark's own command. Planned by {@link UshasExtensions}.
 */
public final class AnalyzeTableExec extends SparkPlan implements LeafExecNode {
    private final transient UshasCatalog catalog;
    private final Identifier ident;
    /** the partition spec (a key without a value matches every value); null: the whole table */
    private final Map<String, String> partition;
    /** the columns (FOR COLUMNS), empty for none; null: every column (FOR ALL COLUMNS) */
    private final List<String> columns;
    private transient boolean done;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public AnalyzeTableExec(UshasCatalog catalog, Identifier ident, Map<String, String> partition,
                            List<String> columns) {
        this.catalog = catalog;
        this.ident = ident;
        this.partition = partition;
        this.columns = columns;
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
        session().sql(statement()).collect();
        done = true;
    }

    /** The CALL statement that does it. */
    String statement() {
        StringBuilder table = new StringBuilder();
        for (String part : ident.namespace()) table.append(quote(part)).append('.');
        table.append(quote(ident.name()));
        StringBuilder sql = new StringBuilder("CALL ").append(quote(catalog.name()))
                .append(".system.analyze_table(table => ").append(literal(table.toString()));
        if (partition != null) {
            List<String> pairs = new ArrayList<>();
            for (Map.Entry<String, String> e : partition.entrySet()) {
                if (e.getValue() != null) {
                    pairs.add(literal(e.getKey()));
                    pairs.add(literal(e.getValue()));
                }
            }
            sql.append(", partition => ").append(pairs.isEmpty() ? "CAST(map() AS MAP<STRING, STRING>)"
                    : "map(" + String.join(", ", pairs) + ")");
        } else if (columns != null) {
            List<String> names = new ArrayList<>();
            for (String c : columns) names.add(literal(c));
            sql.append(", columns => ").append(names.isEmpty() ? "CAST(array() AS ARRAY<STRING>)"
                    : "array(" + String.join(", ", names) + ")");
        }
        return sql.append(")").toString();
    }

    private static String quote(String part) {
        return "`" + part.replace("`", "``") + "`";
    }

    private static String literal(String value) {
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'";
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
        return "UshasAnalyzeTable " + catalog.name() + "." + ident + (partition != null ? " PARTITION " + partition : "")
                + (columns != null ? " FOR COLUMNS " + columns : "");
    }

    @Override
    public String nodeName() {
        return "UshasAnalyzeTable";
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
            case 2 -> partition;
            case 3 -> columns;
            default -> throw new IndexOutOfBoundsException(n);
        };
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof AnalyzeTableExec;
    }
}
