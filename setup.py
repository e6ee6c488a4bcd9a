"""Packaging for ethosu-tvm: an Ethos-U55 compiler plugin for Apache TVM 0.27 (Relax + TIR)."""
from setuptools import find_packages, setup

setup(
    name="ethosu-tvm",
    version="0.1.0",
    description="Compile quantized TFLite models to C for Cortex-M + Arm Ethos-U55 with Apache TVM",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11,<3.12",
    # src/ (the C runtime glue copied into every MLF) is installed as the data folder ethosu_tvm/_glue.
    package_dir={"": "python", "ethosu_tvm._glue": "src"},
    packages=find_packages("python") + ["ethosu_tvm._glue"],
    package_data={"ethosu_tvm._glue": ["*.c", "*.h"], "ethosu_tvm.run": ["shim/*.c", "shim/*.h"],
                  "ethosu_tvm.firmware": ["corstone300/*", "zephyr/*"]},
    install_requires=[
        "apache-tvm==0.27.0.post1",
        "ethos-u-vela==5.2.0",
        "tflite==2.18.0",
        "numpy>=1.26",
        "flatbuffers>=24.3.25",
    ],
    extras_require={
        "test": [
            "pytest==9.2.0",
            "hypothesis==6.170.15",
            "ai-edge-litert==2.3.0",
            "tflite-micro==0.dev20261023182759",
            "kconfiglib==14.1.0",
            "PyYAML==6.0.4",
        ],
    },
    entry_points={"console_scripts": ["tvmc = ethosu_tvm.process:command"]},
)
