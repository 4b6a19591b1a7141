package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.execution.LeafExecNode;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.command.CommandUtils;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

import java.util.ArrayList;
import java.util.List;

/**
 * {@code DROP TABLE [IF EXISTS] t [PURGE]} of an Ushas table in ONE bridge round trip. Spark's own
 * {@code DropTableExec} makes two or three catalog calls ({@code tableExists}, then {@code dropTable} /
 * {@code purgeTable}, or for a missing table {@code viewExists}), each a Py4J round trip into Python; this exec
 * sends them as one request ({@code drop_table_statement}) that Python answers by running those same calls one
 * after the other, each exactly as if the shim had sent it alone (the same privilege checks, transactions,
 * share and remote handling: {@code ushas_catalog.spark.statements}). The outcome is Spark's: the cached data of
 * an existing table is uncached and the table dropped; a view of that name is {@code WRONG_COMMAND_FOR_OBJECT_TYPE}
 * (with or without IF EXISTS, as Spark 4.3); a missing table is {@code TABLE_OR_VIEW_NOT_FOUND} without IF
 * EXISTS. Planned by {@link UshasExtensions}; outputs no rows.
 */
public final class DropTableExec extends SparkPlan implements LeafExecNode {
    private final transient UshasCatalog catalog;
    private final Identifier ident;
    private final boolean ifExists;
    private final boolean purge;
    private final transient ResolvedIdentifier resolved;
    private transient boolean done;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public DropTableExec(UshasCatalog catalog, Identifier ident, boolean ifExists, boolean purge,
                         ResolvedIdentifier resolved) {
        this.catalog = catalog;
        this.ident = ident;
        this.ifExists = ifExists;
        this.purge = purge;
        this.resolved = resolved;
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
        JsonNode answer = catalog.dropTableStatement(ident, purge,
                () -> CommandUtils.uncacheTableOrView(session(), resolved));
        done = true;
        if (answer.path("exists").asBoolean(false)) return;
        List<String> parts = new ArrayList<>();
        parts.add(catalog.name());
        parts.addAll(List.of(ident.namespace()));
        parts.add(ident.name());
        if (answer.path("view").asBoolean(false)) {
            List<String> quoted = parts.stream().map(org.apache.spark.sql.catalyst.util.QuotingUtils::quoteIfNeeded).toList();
            throw Errors.sneak(QueryCompilationErrors.wrongCommandForObjectTypeError(
                    "DROP TABLE", "TABLE", String.join(".", quoted), "VIEW", "DROP VIEW"));
        }
        if (!ifExists) {
            throw Errors.sneak(QueryCompilationErrors.noSuchTableError(
                    scala.jdk.javaapi.CollectionConverters.asScala(parts).toList()));
        }
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
        return "UshasDropTable " + catalog.name() + "." + ident + (ifExists ? " IF EXISTS" : "") + (purge ? " PURGE" : "");
    }

    @Override
    public String nodeName() {
        return "UshasDropTable";
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
            case 2 -> ifExists;
            case 3 -> purge;
            case 4 -> resolved;
            default -> throw new IndexOutOfBoundsException(n);
        };
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof DropTableExec;
    }
}
