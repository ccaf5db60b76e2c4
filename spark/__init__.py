"""Analysis side of the project: PySpark jobs over tinySSB captures.

``convert`` turns CBOR captures into a Parquet dataset partitioned by run, ``metrics``
computes convergence, latency, airtime, duplicates and stalls as DataFrame jobs,
``report`` writes tables, ``summary.json``, plots and ``index.html``; ``cli`` adds
``tinyssb analyze`` and ``tinyssb capture convert``, ``job`` is the spark-submit entry
point and ``main_job`` is ``make run``. See docs/spark.md.
"""
