"""A Spark job whose driver raises: the application must end FAILED with this message."""
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("spindle-fail").getOrCreate()
count = spark.sparkContext.parallelize(range(10), 2).count()
raise RuntimeError(f"deliberate failure after counting {count} rows")
