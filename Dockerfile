# A minimal image with ethosu-tvm installed; `docker run IMAGE` prints tvmc's help.
FROM python:3.11-slim
WORKDIR /opt/ethosu-tvm
COPY setup.py README.md ./
COPY python ./python
COPY src ./src
RUN pip install --no-cache-dir . && tvmc --help
CMD ["tvmc", "--help"]
