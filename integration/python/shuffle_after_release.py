"""A shuffle read after the executors that wrote it are gone (dynamic allocation with
Spark's external shuffle service): the map stage runs once, every executor is released for
being idle, then the same shuffle is read again by a new executor, from the NodeManager's
shuffle service. Prints MAP_RECORDS (how many records the map side processed: once, when
the second read did not run the map stage again), the two results and how many executors
were left when the second read began."""
import sys
import time

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("shuffle-after-release").getOrCreate()
sc = spark.sparkContext
mapped = sc.accumulator(0)


def tag(x):
    mapped.add(1)
    return (x % 97, 1)


counts = sc.parallelize(range(20000), 4).map(tag).reduceByKey(lambda a, b: a + b, 3)
first = sorted(counts.collect())


def executors():
    # The driver is listed too.
    return sc._jsc.sc().getExecutorMemoryStatus().size() - 1


deadline = time.time() + float(sys.argv[1] if len(sys.argv) > 1 else 120)
while executors() > 0 and time.time() < deadline:
    time.sleep(0.5)
left = executors()
second = sorted(counts.collect())
print("EXECUTORS_BEFORE_SECOND_READ=%d" % left)
print("MAP_RECORDS=%d" % mapped.value)
print("SAME_RESULT=%s" % (first == second))
print("GROUPS=%d TOTAL=%d" % (len(second), sum(v for _, v in second)))
spark.stop()
