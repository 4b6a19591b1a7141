package io.ushas.spark;

/** The shim's version; lets Python check it talks to the jar it built. */
public final class Version {
    public static final String VERSION = "0.1.0";

    private Version() {}
}
