"""Java artifacts resolved once into .local/jars (deploy/jars.py): the lock is enforced, and a complete copy is not
resolved again (no Maven, no network). That the resolved groups work is tests/deploy/test_kafka.py's: a broker from
the broker group, read by Spark's Kafka source from the connector group in `spark.jars`."""
import pytest

from deploy import jars


def _fake_maven(tmp_path, coordinates_to_files):
    """A stand-in for `mvn` in the unit tests only: files in tmp_path named as Maven would copy them."""
    def listing(coordinates):
        out = {}
        for coordinate in coordinates_to_files[coordinates]:
            _, artifact, version = coordinate.split(":")
            path = tmp_path / "m2" / f"{artifact}-{version}.jar"
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(b"jar")
            out[coordinate] = path
        return out
    return listing


@pytest.fixture
def one_group(monkeypatch, tmp_path):
    monkeypatch.setattr(jars, "GROUPS", {"g": ("a:top:1",)})
    monkeypatch.setattr(jars, "ON_SPARK_CLASSPATH", frozenset({"g"}))
    monkeypatch.setattr(jars, "_pyspark_jar_names", lambda: {"scala-library-2.13.17.jar"})
    lock = tmp_path / "jars.lock"
    monkeypatch.setattr(jars, "LOCK", lock)
    return lock


def test_resolve_copies_the_locked_set_leaves_out_pysparks_own_and_does_not_resolve_again(
        one_group, monkeypatch, tmp_path):
    calls = []
    fake = _fake_maven(tmp_path, {("a:top:1",): ["a:top:1", "b:dep:2", "org.scala-lang:scala-library:2.13.15"]})
    monkeypatch.setattr(jars, "_maven_list", lambda c: calls.append(c) or fake(c))
    dest = tmp_path / "jars"
    jars.resolve(update_lock=True, destination=dest)
    assert jars.read_lock(one_group) == {"g": ["a:top:1", "b:dep:2"]}
    assert sorted(p.name for p in jars.classpath("g", dest)) == ["dep-2.jar", "top-1.jar"]
    jars.resolve(destination=dest)
    assert len(calls) == 1, "a complete copy of the locked set is used as it is: no Maven, no network"


def test_a_resolution_other_than_the_lock_fails_naming_the_difference_and_copies_nothing(
        one_group, monkeypatch, tmp_path):
    one_group.write_text("g a:top:1\ng b:dep:2\n")
    monkeypatch.setattr(jars, "_maven_list", _fake_maven(tmp_path, {("a:top:1",): ["a:top:1", "b:dep:3"]}))
    with pytest.raises(jars.JarsError, match=r"not in the lock \['b:dep:3'\], missing \['b:dep:2'\]"):
        jars.resolve(destination=tmp_path / "jars")
    assert not (tmp_path / "jars").exists()


def test_a_malformed_lock_line_is_named_by_file_and_line(tmp_path):
    lock = tmp_path / "jars.lock"
    lock.write_text("# comment\ng a:top:1\ng a-top-1\n")
    with pytest.raises(jars.JarsError, match=rf"{lock}:3: expected"):
        jars.read_lock(lock)


def test_an_unresolved_group_says_how_to_resolve_it(tmp_path):
    with pytest.raises(jars.JarsError, match="run `make services`"):
        jars.classpath("spark-kafka", tmp_path)
    with pytest.raises(jars.JarsError, match="unknown jar group 'kafka'"):
        jars.classpath("kafka", tmp_path)


def test_the_pinned_groups_are_the_locked_ones():
    assert set(jars.read_lock()) == set(jars.GROUPS)
    for group, coordinates in jars.GROUPS.items():
        assert set(coordinates) <= set(jars.read_lock()[group]), group
