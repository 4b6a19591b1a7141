package io.ushas.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;

/**
 * {@code CREATE TABLE t LIKE s [USING fmt] [LOCATION '…'] [TBLPROPERTIES (…)]} into this catalog. Spark 4.3
 * plans it as {@code CreateTableLikeExec}, which passes the source's columns and partitioning and the
 * statement's own properties ({@code provider} when USING is given, {@code location}, TBLPROPERTIES, owner)
 * in {@code info}, and the source table itself. Python decides what the new table takes from the source
 * ({@code create_table_like}: as Spark's session catalog does, the format and the format's options, not its
 * properties or comment); here the source is described as JSON: its properties and whether it is a view or
 * a Hive table (with its storage).
 */
final class UshasTableLike {
    private UshasTableLike() {}

    static ObjectNode request(UshasCatalog catalog, Identifier ident, TableInfo info, Table source) {
        ObjectNode r = catalog.request(ident);
        r.put("schema", info.schema().json());
        ArrayNode parts = r.putArray("partitioning");
        for (Transform t : info.partitions()) {
            ObjectNode p = parts.addObject().put("transform", t.name()).put("text", t.toString());
            ArrayNode cols = p.putArray("columns");
            for (NamedReference ref : t.references()) cols.add(String.join(".", ref.fieldNames()));
        }
        r.set("properties", Json.map(info.properties()));
        ObjectNode like = r.putObject("like");
        like.put("name", source.name());
        like.set("properties", Json.map(source.properties()));
        if (source instanceof V1Table v) {
            CatalogTable t = v.v1Table();
            like.put("type", t.tableType() == CatalogTableType.VIEW() ? "VIEW" : t.tableType().name());
            if (t.provider().isDefined()) like.put("provider", t.provider().get());
            if (t.storage().serde().isDefined()) like.put("serde", t.storage().serde().get());
            if (t.storage().inputFormat().isDefined()) like.put("input_format", t.storage().inputFormat().get());
            like.set("storage_properties", Json.map(scala.jdk.javaapi.CollectionConverters.asJava(t.storage().properties())));
        }
        return r;
    }
}
