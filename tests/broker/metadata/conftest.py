from tests.zookeeper import zookeeper, zookeeper_module  # noqa: F401  (pytest fixtures)
