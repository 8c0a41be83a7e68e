package infer

import (
	"embed"
	"fmt"
)

// builtin holds the committed fixed-point weights of the two MNIST
// models (trained by `kord infer train`), so that inference needs neither
// training nor the repository's files at run time.
//
//go:embed testdata/mlp.kordnn testdata/cnn.kordnn
var builtin embed.FS

// BuiltinModels names the models Builtin knows.
var BuiltinModels = []string{"mlp", "cnn"}

// Builtin returns a committed model by name: "mlp" (P-SecureML,
// 784-128-128-10) or "cnn" (LeNet-style, two 5×5 convolutions).
func Builtin(name string) (*Model, error) {
	data, err := builtin.ReadFile("testdata/" + name + ".kordnn")
	if err != nil {
		return nil, fmt.Errorf("infer: no built-in model %q (want mlp or cnn)", name)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("infer: built-in model %s: %w", name, err)
	}
	return m, nil
}
