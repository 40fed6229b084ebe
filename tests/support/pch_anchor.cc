// The one source of uringmq_test_pch (tests/CMakeLists.txt): the executable that builds the
// test executables' precompiled header with their flags (an executable, as they are: -fPIE),
// so that they can reuse it. Never run.
int main() {
  return 0;
}
