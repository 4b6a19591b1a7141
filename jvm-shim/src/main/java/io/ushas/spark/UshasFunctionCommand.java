package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.command.LeafRunnableCommand;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * CREATE / DROP / DESCRIBE / REFRESH FUNCTION and SHOW FUNCTIONS on an Ushas catalog: Spark 4.3 plans these
 * statements only for its session catalog and refuses them for every other catalog
 * ({@code MISSING_CATALOG_ABILITY.CREATE_FUNCTION}, {@code .DROP_FUNCTION}, {@code .REFRESH_FUNCTION},
 * {@code .FUNCTIONS}, in {@code ResolveSessionCatalog}); {@link FunctionStatements} turns them into this
 * command first. Each is one bridge call; what to print is Python's ({@code ushas_catalog.spark.functions}).
 */
public final class UshasFunctionCommand extends LogicalPlan implements LeafRunnableCommand {
    private final transient UshasCatalog catalog;
    private final String kind;
    private final String[] namespace;
    private final String name;
    private final String payload;
    private final Seq<Attribute> output;
    private Seq<scala.Enumeration.Value> nodePatterns;

    /** Public, with the product elements as parameters: Spark copies plans through this constructor. */
    public UshasFunctionCommand(UshasCatalog catalog, String kind, String[] namespace, String name, String payload,
                                Seq<Attribute> output) {
        this.catalog = catalog;
        this.kind = kind;
        this.namespace = namespace;
        this.name = name;
        this.payload = payload;
        this.output = output;
        this.nodePatterns = scala.collection.immutable.List$.MODULE$.empty().$colon$colon(
                org.apache.spark.sql.catalyst.trees.TreePattern$.MODULE$.COMMAND());
    }

    @Override
    public Seq<Row> run(SparkSession session) {
        ObjectNode request = (ObjectNode) Json.parse(payload);
        List<Row> rows = new ArrayList<>();
        switch (kind) {
            case "create" -> {
                if (request.path("definition").has("body")) {
                    UshasFunctions.validateSql(name, catalog.name() + "." + String.join(".", namespace) + "." + name,
                            request.get("definition"));
                }
                catalog.functionCall("create_function", namespace, name, request);
            }
            case "drop" -> catalog.functionCall("drop_function", namespace, name, request);
            case "refresh" -> catalog.functionCall("load_function", namespace, name, request);
            case "describe" -> {
                JsonNode answer = catalog.functionCall("describe_function", namespace, name, request);
                for (JsonNode line : answer.get("lines")) rows.add(RowFactory.create(line.asText()));
            }
            case "show" -> {
                TreeSet<String> names = new TreeSet<>();
                if (request.path("user").asBoolean()) {
                    JsonNode answer = catalog.functionCall("list_functions", namespace, null, request);
                    for (JsonNode f : answer.get("functions")) names.add(f.asText());
                    // the session's temporary functions are user functions of every namespace, as the
                    // session catalog lists them
                    List<String> temps = new ArrayList<>();
                    for (org.apache.spark.sql.catalyst.FunctionIdentifier f : scala.jdk.javaapi.CollectionConverters
                            .asJava(session.sessionState().catalog().listTemporaryFunctions())) {
                        temps.add(f.unquotedString());
                    }
                    String pattern = Json.text(request, "pattern");
                    if (pattern != null) {
                        temps = new ArrayList<>(scala.jdk.javaapi.CollectionConverters.asJava(
                                org.apache.spark.sql.catalyst.util.StringUtils.filterPattern(
                                        scala.jdk.javaapi.CollectionConverters.asScala(temps).toList(), pattern)));
                    }
                    names.addAll(temps);
                }
                if (request.path("system").asBoolean()) {
                    String pattern = Json.text(request, "pattern");
                    String sql = "SHOW SYSTEM FUNCTIONS" + (pattern == null ? "" : " LIKE '" + pattern.replace("'", "\\'") + "'");
                    for (Row r : session.sql(sql).collectAsList()) names.add(r.getString(0));
                }
                for (String n : names) rows.add(RowFactory.create(n));
            }
            default -> throw Errors.invalidArgument("unknown function statement " + kind);
        }
        return scala.jdk.javaapi.CollectionConverters.asScala(rows).toList();
    }

    @Override
    public Seq<Attribute> output() {
        return output;
    }

    @Override
    public Seq<scala.Enumeration.Value> nodePatterns() {
        return nodePatterns;
    }

    @Override
    public void org$apache$spark$sql$catalyst$plans$logical$Command$_setter_$nodePatterns_$eq(
            Seq<scala.Enumeration.Value> patterns) {
        this.nodePatterns = patterns;
    }

    @Override
    public Seq<LogicalPlan> children() {
        return scala.collection.immutable.List$.MODULE$.empty();
    }

    @Override
    public LogicalPlan withNewChildrenInternal(IndexedSeq<LogicalPlan> children) {
        return this;
    }

    @Override
    public String simpleString(int maxFields) {
        return "UshasFunctionCommand " + kind + " " + catalog.name() + "." + String.join(".", namespace)
                + (name == null ? "" : "." + name);
    }

    @Override
    public String nodeName() {
        return "UshasFunctionCommand";
    }

    @Override
    public int productArity() {
        return 6;
    }

    @Override
    public Object productElement(int n) {
        return switch (n) {
            case 0 -> catalog;
            case 1 -> kind;
            case 2 -> namespace;
            case 3 -> name;
            case 4 -> payload;
            case 5 -> output;
            default -> throw new IndexOutOfBoundsException(n);
        };
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof UshasFunctionCommand;
    }
}
