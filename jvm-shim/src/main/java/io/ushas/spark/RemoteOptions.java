package io.ushas.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.function.UnaryOperator;

import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Remote mode (docs/service.md, "Remote mode"): a catalog whose {@code uri} is {@code http(s)://host:port}
 * is served by {@code ushas serve}. Adaptation only: the options Python's forwarder
 * ({@code ushas_catalog.spark.remote}) needs go into the request context as they are, under
 * {@code remote}: {@code token}, {@code token_file}, {@code direct} (whether the shim may send read ops to the
 * service itself: {@link RemoteTransport}), and {@code set}, the catalog options that are set
 * among those remote mode refuses ({@code user}, {@code authorization}); Python decides what they mean.
 */
final class RemoteOptions {
    private RemoteOptions() {}

    static boolean remote(String uri) {
        String u = uri == null ? "" : uri.trim().toLowerCase(java.util.Locale.ROOT);
        return u.startsWith("http://") || u.startsWith("https://");
    }

    static void describe(ObjectNode context, CaseInsensitiveStringMap options) {
        describe(context, options::get);
    }

    /** The same from {@code option}: a catalog's option by key (the lineage listener reads Spark's conf). */
    static void describe(ObjectNode context, UnaryOperator<String> option) {
        if (!remote(option.apply("uri"))) return;
        ObjectNode remote = context.putObject("remote");
        if (option.apply("token") != null) remote.put("token", option.apply("token"));
        if (option.apply("token-file") != null) remote.put("token_file", option.apply("token-file"));
        if (option.apply("direct") != null) remote.put("direct", option.apply("direct"));  // RemoteTransport
        ArrayNode set = remote.putArray("set");
        for (String key : new String[] {"user", "authorization"}) {
            if (option.apply(key) != null) set.add(key);
        }
    }
}
