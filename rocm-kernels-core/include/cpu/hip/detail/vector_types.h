/* HIP vector types (float4, int2, ...), make_* functions and the element-wise operators HIP
 * defines for them (+ - * / with vectors and scalars, compound assignment, unary -, ==, !=).
 * Layout and alignment follow HIP/CUDA: 2-element vectors are aligned to their size, 4-element
 * ones to min(size, 16), 3- and 1-element ones to their element. */
#ifndef RK_CPU_VECTOR_TYPES_H
#define RK_CPU_VECTOR_TYPES_H

#define RK_VEC_OPS1(V, T)                                                                       \
    inline V operator+(V a, V b) { return V{static_cast<T>(a.x + b.x)}; }                                  \
    inline V operator-(V a, V b) { return V{static_cast<T>(a.x - b.x)}; }                                  \
    inline V operator*(V a, V b) { return V{static_cast<T>(a.x * b.x)}; }                                  \
    inline V operator/(V a, V b) { return V{static_cast<T>(a.x / b.x)}; }                                  \
    inline V operator*(V a, T s) { return V{static_cast<T>(a.x * s)}; }                                    \
    inline V operator*(T s, V a) { return V{static_cast<T>(s * a.x)}; }                                    \
    inline V operator/(V a, T s) { return V{static_cast<T>(a.x / s)}; }                                    \
    inline V operator+(V a, T s) { return V{static_cast<T>(a.x + s)}; }                                    \
    inline V operator-(V a, T s) { return V{static_cast<T>(a.x - s)}; }                                    \
    inline V operator-(V a) { return V{static_cast<T>(-a.x)}; }                                            \
    inline bool operator==(V a, V b) { return a.x == b.x; }
#define RK_VEC_OPS2(V, T)                                                                       \
    inline V operator+(V a, V b) { return V{static_cast<T>(a.x + b.x), static_cast<T>(a.y + b.y)}; }                   \
    inline V operator-(V a, V b) { return V{static_cast<T>(a.x - b.x), static_cast<T>(a.y - b.y)}; }                   \
    inline V operator*(V a, V b) { return V{static_cast<T>(a.x * b.x), static_cast<T>(a.y * b.y)}; }                   \
    inline V operator/(V a, V b) { return V{static_cast<T>(a.x / b.x), static_cast<T>(a.y / b.y)}; }                   \
    inline V operator*(V a, T s) { return V{static_cast<T>(a.x * s), static_cast<T>(a.y * s)}; }                       \
    inline V operator*(T s, V a) { return V{static_cast<T>(s * a.x), static_cast<T>(s * a.y)}; }                       \
    inline V operator/(V a, T s) { return V{static_cast<T>(a.x / s), static_cast<T>(a.y / s)}; }                       \
    inline V operator+(V a, T s) { return V{static_cast<T>(a.x + s), static_cast<T>(a.y + s)}; }                       \
    inline V operator-(V a, T s) { return V{static_cast<T>(a.x - s), static_cast<T>(a.y - s)}; }                       \
    inline V operator-(V a) { return V{static_cast<T>(-a.x), static_cast<T>(-a.y)}; }                                   \
    inline bool operator==(V a, V b) { return a.x == b.x && a.y == b.y; }
#define RK_VEC_OPS3(V, T)                                                                       \
    inline V operator+(V a, V b) { return V{static_cast<T>(a.x + b.x), static_cast<T>(a.y + b.y), static_cast<T>(a.z + b.z)}; }     \
    inline V operator-(V a, V b) { return V{static_cast<T>(a.x - b.x), static_cast<T>(a.y - b.y), static_cast<T>(a.z - b.z)}; }     \
    inline V operator*(V a, V b) { return V{static_cast<T>(a.x * b.x), static_cast<T>(a.y * b.y), static_cast<T>(a.z * b.z)}; }     \
    inline V operator/(V a, V b) { return V{static_cast<T>(a.x / b.x), static_cast<T>(a.y / b.y), static_cast<T>(a.z / b.z)}; }     \
    inline V operator*(V a, T s) { return V{static_cast<T>(a.x * s), static_cast<T>(a.y * s), static_cast<T>(a.z * s)}; }           \
    inline V operator*(T s, V a) { return V{static_cast<T>(s * a.x), static_cast<T>(s * a.y), static_cast<T>(s * a.z)}; }           \
    inline V operator/(V a, T s) { return V{static_cast<T>(a.x / s), static_cast<T>(a.y / s), static_cast<T>(a.z / s)}; }           \
    inline V operator+(V a, T s) { return V{static_cast<T>(a.x + s), static_cast<T>(a.y + s), static_cast<T>(a.z + s)}; }           \
    inline V operator-(V a, T s) { return V{static_cast<T>(a.x - s), static_cast<T>(a.y - s), static_cast<T>(a.z - s)}; }           \
    inline V operator-(V a) { return V{static_cast<T>(-a.x), static_cast<T>(-a.y), static_cast<T>(-a.z)}; }                          \
    inline bool operator==(V a, V b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
#define RK_VEC_OPS4(V, T)                                                                                 \
    inline V operator+(V a, V b) { return V{static_cast<T>(a.x + b.x), static_cast<T>(a.y + b.y), static_cast<T>(a.z + b.z), static_cast<T>(a.w + b.w)}; } \
    inline V operator-(V a, V b) { return V{static_cast<T>(a.x - b.x), static_cast<T>(a.y - b.y), static_cast<T>(a.z - b.z), static_cast<T>(a.w - b.w)}; } \
    inline V operator*(V a, V b) { return V{static_cast<T>(a.x * b.x), static_cast<T>(a.y * b.y), static_cast<T>(a.z * b.z), static_cast<T>(a.w * b.w)}; } \
    inline V operator/(V a, V b) { return V{static_cast<T>(a.x / b.x), static_cast<T>(a.y / b.y), static_cast<T>(a.z / b.z), static_cast<T>(a.w / b.w)}; } \
    inline V operator*(V a, T s) { return V{static_cast<T>(a.x * s), static_cast<T>(a.y * s), static_cast<T>(a.z * s), static_cast<T>(a.w * s)}; }         \
    inline V operator*(T s, V a) { return V{static_cast<T>(s * a.x), static_cast<T>(s * a.y), static_cast<T>(s * a.z), static_cast<T>(s * a.w)}; }         \
    inline V operator/(V a, T s) { return V{static_cast<T>(a.x / s), static_cast<T>(a.y / s), static_cast<T>(a.z / s), static_cast<T>(a.w / s)}; }         \
    inline V operator+(V a, T s) { return V{static_cast<T>(a.x + s), static_cast<T>(a.y + s), static_cast<T>(a.z + s), static_cast<T>(a.w + s)}; }         \
    inline V operator-(V a, T s) { return V{static_cast<T>(a.x - s), static_cast<T>(a.y - s), static_cast<T>(a.z - s), static_cast<T>(a.w - s)}; }         \
    inline V operator-(V a) { return V{static_cast<T>(-a.x), static_cast<T>(-a.y), static_cast<T>(-a.z), static_cast<T>(-a.w)}; }                           \
    inline bool operator==(V a, V b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; }

#define RK_VEC_COMMON(V, T)                                            \
    inline bool operator!=(V a, V b) { return !(a == b); }             \
    inline V &operator+=(V &a, V b) { return a = a + b; }              \
    inline V &operator-=(V &a, V b) { return a = a - b; }              \
    inline V &operator*=(V &a, V b) { return a = a * b; }              \
    inline V &operator/=(V &a, V b) { return a = a / b; }              \
    inline V &operator*=(V &a, T s) { return a = a * s; }              \
    inline V &operator/=(V &a, T s) { return a = a / s; }

#define RK_VECTORS(T, N)                                                                                  \
    struct N##1 { T x; };                                                                                 \
    struct alignas(2 * sizeof(T)) N##2 { T x, y; };                                                       \
    struct N##3 { T x, y, z; };                                                                           \
    struct alignas(4 * sizeof(T) < 16 ? 4 * sizeof(T) : 16) N##4 { T x, y, z, w; };                     \
    inline N##1 make_##N##1(T x) { return N##1{x}; }                                                      \
    inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }                                              \
    inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }                                      \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }                              \
    RK_VEC_OPS1(N##1, T) RK_VEC_OPS2(N##2, T) RK_VEC_OPS3(N##3, T) RK_VEC_OPS4(N##4, T)                  \
    RK_VEC_COMMON(N##1, T) RK_VEC_COMMON(N##2, T) RK_VEC_COMMON(N##3, T) RK_VEC_COMMON(N##4, T)

RK_VECTORS(signed char, char)
RK_VECTORS(unsigned char, uchar)
RK_VECTORS(short, short)
RK_VECTORS(unsigned short, ushort)
RK_VECTORS(int, int)
RK_VECTORS(unsigned int, uint)
RK_VECTORS(long, long)
RK_VECTORS(unsigned long, ulong)
RK_VECTORS(long long, longlong)
RK_VECTORS(unsigned long long, ulonglong)
RK_VECTORS(float, float)
RK_VECTORS(double, double)

#undef RK_VECTORS
#undef RK_VEC_COMMON
#undef RK_VEC_OPS1
#undef RK_VEC_OPS2
#undef RK_VEC_OPS3
#undef RK_VEC_OPS4

#endif
