package io.ushas.spark;

import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** Test only: a Spark V2 function class (scalar, INT -> INT, adds ten), for CREATE FUNCTION ... AS 'class'. */
public final class PlusTen implements UnboundFunction, ScalarFunction<Integer> {
    @Override
    public BoundFunction bind(StructType inputType) {
        return this;
    }

    @Override
    public String description() {
        return "plus_ten(int): int + 10";
    }

    @Override
    public DataType[] inputTypes() {
        return new DataType[] {DataTypes.IntegerType};
    }

    @Override
    public DataType resultType() {
        return DataTypes.IntegerType;
    }

    @Override
    public Integer produceResult(org.apache.spark.sql.catalyst.InternalRow input) {
        return input.isNullAt(0) ? null : input.getInt(0) + 10;
    }

    @Override
    public String name() {
        return "plus_ten";
    }
}
