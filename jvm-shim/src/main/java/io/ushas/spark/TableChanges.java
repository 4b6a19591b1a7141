package io.ushas.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.TableChange;

/** Spark's TableChange objects as JSON: {@code {"type": <TableChange class name>, ...fields}}, the form
 * {@code ushas_catalog.table_changes.changes_from_json} reads. */
final class TableChanges {
    private TableChanges() {}

    static ArrayNode toJson(TableChange[] changes) {
        ArrayNode out = Json.array();
        for (TableChange c : changes) out.add(toJson(c));
        return out;
    }

    private static ObjectNode toJson(TableChange c) {
        ObjectNode o = Json.object();
        o.put("type", c.getClass().getSimpleName());
        if (c instanceof TableChange.SetProperty s) {
            o.put("property", s.property()).put("value", s.value());
        } else if (c instanceof TableChange.RemoveProperty r) {
            o.put("property", r.property());
        } else if (c instanceof TableChange.AddColumn a) {
            o.set("fieldNames", Json.strings(a.fieldNames()));
            o.set("dataType", Json.parse(a.dataType().json()));
            o.put("nullable", a.isNullable());
            o.put("comment", a.comment());
            position(o, a.position());
            if (a.defaultValue() != null) o.put("default", a.defaultValue().getSql());
        } else if (c instanceof TableChange.RenameColumn r) {
            o.set("fieldNames", Json.strings(r.fieldNames()));
            o.put("newName", r.newName());
        } else if (c instanceof TableChange.UpdateColumnType u) {
            o.set("fieldNames", Json.strings(u.fieldNames()));
            o.set("newDataType", Json.parse(u.newDataType().json()));
        } else if (c instanceof TableChange.UpdateColumnComment u) {
            o.set("fieldNames", Json.strings(u.fieldNames()));
            o.put("newComment", u.newComment());
        } else if (c instanceof TableChange.UpdateColumnNullability u) {
            o.set("fieldNames", Json.strings(u.fieldNames()));
            o.put("nullable", u.nullable());
        } else if (c instanceof TableChange.UpdateColumnPosition u) {
            o.set("fieldNames", Json.strings(u.fieldNames()));
            position(o, u.position());
        } else if (c instanceof TableChange.DeleteColumn d) {
            o.set("fieldNames", Json.strings(d.fieldNames()));
            o.put("ifExists", Boolean.TRUE.equals(d.ifExists()));
        } else if (c instanceof TableChange.UpdateColumnDefaultValue u) {
            o.set("fieldNames", Json.strings(u.fieldNames()));
            o.put("default", u.newDefaultValue());
        } else {
            o.put("text", c.toString());  // Python refuses kinds it does not know, with a clear error
        }
        return o;
    }

    private static void position(ObjectNode o, TableChange.ColumnPosition p) {
        if (p == null) return;
        if (p instanceof TableChange.First) {
            o.putObject("position").put("type", "first");
        } else if (p instanceof TableChange.After a) {
            o.putObject("position").put("type", "after").put("column", a.column());
        }
    }
}
