from tests.zookeeper import local_cluster, zookeeper, zookeeper_module  # noqa: F401  (pytest fixtures)
