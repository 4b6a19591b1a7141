package io.ushas.bench;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * BENCHMARK ONLY (bench/drop_profile.py compiles it at run time; never part of the product jar).
 *
 * A V2 catalog that does nothing: every table whose name does not start with {@code missing} exists, and
 * dropping it returns at once. {@code DROP TABLE nul.db.t} then costs what Spark itself spends on a DROP
 * TABLE of any V2 catalog (parsing, analysis, planning, {@code DropTableExec}, the SQL execution's events):
 * the floor a catalog's own work adds to.
 */
public class NullCatalog implements TableCatalog {
    private String name;

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Identifier[] listTables(String[] namespace) {
        return new Identifier[0];
    }

    @Override
    public Table loadTable(Identifier ident) {
        throw new UnsupportedOperationException("NullCatalog has no tables to load");
    }

    @Override
    public boolean tableExists(Identifier ident) {
        return !ident.name().startsWith("missing");
    }

    @Override
    @SuppressWarnings("deprecation")
    public Table createTable(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
        throw new UnsupportedOperationException("NullCatalog creates nothing");
    }

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) {
        throw new UnsupportedOperationException("NullCatalog alters nothing");
    }

    @Override
    public boolean dropTable(Identifier ident) {
        return true;
    }

    @Override
    public void renameTable(Identifier oldIdent, Identifier newIdent) {
        throw new UnsupportedOperationException("NullCatalog renames nothing");
    }
}
