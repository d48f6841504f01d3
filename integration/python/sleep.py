"""A Spark job that keeps its executors busy until it is killed."""
import sys
import time

from pyspark.sql import SparkSession

seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 600
spark = SparkSession.builder.appName("spindle-sleep").getOrCreate()
spark.sparkContext.parallelize(range(2), 2).foreach(lambda _: time.sleep(seconds))
spark.stop()
