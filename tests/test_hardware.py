import pytest

from axlint.hardware import default_hardware, detect_local_gpus, parse_hardware, parse_smi_output


@pytest.mark.parametrize("spec, gpu, count, gib", [
    ("8xH100", "H100-80GB", 8, 79.2),
    ("1xA100-40GB", "A100-40GB", 1, 39.4),
    ("2x24GiB", "24GiB", 2, 24.0),
    ("4x80GB", "80GB", 4, 79.2),
    (" 8 X h100 ", "H100-80GB", 8, 79.2),
    ("2 x rtx4090", "RTX4090-24GB", 2, 23.6),
    ("H200", "H200-141GB", 1, 139.8),
    ("1xMI300X", "MI300X-192GB", 1, 191.5),
])
def test_parse(spec, gpu, count, gib):
    hw = parse_hardware(spec)
    assert (hw.gpu, hw.count, hw.memory_gib) == (gpu, count, gib)


def test_bare_a100_is_given_not_assumed_and_says_how_it_was_read():
    hw = parse_hardware("8xA100")
    assert not hw.assumed and hw.memory_gib == 79.2
    assert hw.note == "A100 read as the 80 GB card (write A100-40GB for the 40 GB one)"
    assert parse_hardware("8xA100-40GB").note == ""


def test_unknown_name_lists_known_names():
    with pytest.raises(ValueError, match="H100-80GB"):
        parse_hardware("8xFOO9000")


def test_zero_count_rejected():
    with pytest.raises(ValueError):
        parse_hardware("0xH100")


def test_parse_nvidia_smi_output():
    hw = parse_smi_output("NVIDIA H100 80GB HBM3, 81559\nNVIDIA H100 80GB HBM3, 81559\n")
    assert (hw.gpu, hw.count, hw.memory_gib, hw.assumed) == ("H100-80GB", 2, 79.2, False)
    assert parse_smi_output("Tesla T4, 15360").bf16 is False
    assert parse_smi_output("") is None


def test_detect_without_nvidia_smi(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert detect_local_gpus() is None


def test_default_hardware():
    assert (default_hardware(False).count, default_hardware(True).count) == (1, 8)
    assert default_hardware(True).assumed and default_hardware(True).memory_gib == 79.2
